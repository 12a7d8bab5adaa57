import t, { type Test } from 'tap';
import { cli, connection, sandbox } from '../fixtures/env.js';

async function writable(t: Test) {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await connection(sb, { allowWrite: true });
  t.teardown(c.close);
  return { sb, ...c };
}

t.test('append, read and replace with the current hash', async (t) => {
  const { call } = await writable(t);
  const a = await call('shadow_memory', { action: 'append', text: 'one' });
  const b = await call('shadow_memory', { action: 'append', text: 'two' });
  t.equal(b.data.content, 'one\ntwo');
  t.not(a.data.hash, b.data.hash);
  const r = await call('shadow_memory', { action: 'replace', content: 'fresh', expected_hash: b.data.hash });
  t.equal(r.data.content, 'fresh');
});

t.test('replacing with a stale hash is refused and keeps the note', async (t) => {
  const { call } = await writable(t);
  const a = await call('shadow_memory', { action: 'append', text: 'one' });
  await call('shadow_memory', { action: 'append', text: 'two' });
  const r = await call('shadow_memory', { action: 'replace', content: 'lost?', expected_hash: a.data.hash });
  t.equal(r.isError, true);
  t.equal(r.data.error.code, 'SC_HASH_MISMATCH');
  t.equal((await call('shadow_memory', { action: 'read' })).data.content, 'one\ntwo');
});

t.test('a task note needs an exact existing task id of this project', async (t) => {
  const { call, engine, sb } = await writable(t);
  const missing = await call('shadow_memory', { action: 'append', scope: 'task', task_id: 'job_nope', text: 'x' });
  t.equal(missing.data.error.code, 'SC_TASK_NOT_FOUND');
  const db = engine.db();
  const now = new Date().toISOString();
  db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, created_at, updated_at) VALUES ('job_1', ?, 'test', 'o', 'read_only', 'succeeded', ?, ?)").run(sb.project, now, now);
  db.prepare("INSERT INTO jobs (id, project, kind, owner, ceiling, state, created_at, updated_at) VALUES ('job_2', '/elsewhere', 'test', 'o', 'read_only', 'succeeded', ?, ?)").run(now, now);
  t.equal((await call('shadow_memory', { action: 'append', scope: 'task', task_id: 'job_1', text: 'task note' })).data.content, 'task note');
  t.equal((await call('shadow_memory', { action: 'read', scope: 'task', task_id: 'job_2' })).data.error.code, 'SC_TASK_NOT_FOUND', "another project's task is not found");
  t.equal((await call('shadow_memory', { action: 'read', scope: 'task', task_id: 'job_' })).data.error.code, 'SC_TASK_NOT_FOUND', 'a prefix is not an exact id');
  t.equal((await call('shadow_memory', { action: 'read' })).data.content, '', 'the project note is separate');
});

t.test('a note cannot grow past the limit', async (t) => {
  const { call } = await writable(t);
  await call('shadow_memory', { action: 'append', text: 'x'.repeat(200000) });
  const r = await call('shadow_memory', { action: 'append', text: 'y'.repeat(70000) });
  t.equal(r.data.error.code, 'SC_LIMIT_REACHED');
});
