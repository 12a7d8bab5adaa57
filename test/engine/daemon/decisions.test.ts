// Decisions and the shared engine, over real sockets to a real engine process: an
// approved test job waiting for a run slot is `queued` (approve reply, engine status);
// an approval made while every engine socket is taken is reported as made, not as a
// failure, and the engine acts on it as soon as a socket frees.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { shippedPolicy } from '../../../src/policy/load.js';
import { openDb } from '../../../src/store/db.js';
import { label, type RawPeer, rawPeer, startEngine } from '../../fixtures/engine.js';
import { alive, cli, pidsOf, recordPid, type Sandbox, sandbox, until } from '../../fixtures/env.js';

const policy = shippedPolicy();
const testJob = (argv: string[]) => ({ kind: 'test', argv, ceiling: 'workspace', task_id: null });
const long = (file: string) => ['sh', '-c', `sleep 60 & ${recordPid('$!', file)}; ${recordPid('$$', file)}; wait`];
const stateOf = (sb: Sandbox, id: string) => {
  const db = openDb(sb.profile, 5000);
  try {
    return (db.prepare('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string }).state;
  } finally {
    db.close();
  }
};

t.test('an approved job waiting for a run slot is queued, in the approve reply and in engine status', async (t) => {
  const sb = sandbox('dec-q');
  await cli(sb, ['--project', sb.project, 'trust']);
  await startEngine(t, sb);
  const owner = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  t.teardown(() => owner.sock.destroy());
  for (const n of [1, 2].slice(0, policy.limits.jobs.concurrent_running)) {
    const r = await owner.request({ type: 'submit', project: sb.project, job: testJob(long(`pids-${n}`)) });
    t.equal((await cli(sb, ['--project', sb.project, 'approvals', 'approve', r.data.approval.id])).code, 0);
  }
  await until(() => pidsOf(join(sb.project, 'pids-1')).length === 2 && pidsOf(join(sb.project, 'pids-2')).length === 2, 30000);
  const third = await owner.request({ type: 'submit', project: sb.project, job: testJob(['sh', '-c', 'echo ran > third.txt']) });
  t.equal(third.data.job.state, 'waiting_approval', 'before its decision it waits for approval');
  const approved = await cli(sb, ['--project', sb.project, '--json', 'approvals', 'approve', third.data.approval.id]);
  t.equal(approved.code, 0, approved.stderr);
  t.match(JSON.parse(approved.stdout), { approval: { state: 'approved' }, job: { id: third.data.job.id, state: 'queued' }, engine: { mode: 'shared', delivered: true } }, 'the approve reply says queued');
  const status = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
  t.match(status.jobs.find((j: any) => j.id === third.data.job.id), { state: 'queued' }, 'engine status says queued');
  t.equal(status.jobs.filter((j: any) => j.state === 'running').length, 2);
  t.notOk(existsSync(join(sb.project, 'third.txt')), 'it has not run: no slot is free');
  const pids = [...pidsOf(join(sb.project, 'pids-1')), ...pidsOf(join(sb.project, 'pids-2'))];
  owner.sock.destroy();
  await until(() => stateOf(sb, third.data.job.id) === 'cancelled', 30000);
  await until(() => !pids.some(alive), 10000);
});

t.test('an approval made while the engine has no free socket is kept and delivered when one frees', async (t) => {
  const sb = sandbox('dec-busy');
  await cli(sb, ['--project', sb.project, 'trust']);
  await startEngine(t, sb);
  const owner = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  const sub = await owner.request({ type: 'submit', project: sb.project, job: testJob(['sh', '-c', 'echo ran > ran.txt']) });
  t.equal(sub.data.job.state, 'waiting_approval');
  // Take every other socket the engine allows.
  const held: RawPeer[] = [owner];
  t.teardown(() => held.forEach((p) => p.sock.destroy()));
  for (;;) {
    const p = await rawPeer(sb, 'control');
    if (p.ready.type !== 'ready') {
      t.match(p.ready, { type: 'error', code: 'SC_ENGINE_BUSY' }, 'the engine is full');
      break;
    }
    held.push(p);
    if (held.length > policy.limits.engine.connections) throw new Error('the engine never refused a socket');
  }

  const r = await cli(sb, ['--project', sb.project, '--json', 'approvals', 'approve', sub.data.approval.id]);
  t.equal(r.code, 0, `the decision is reported as made, not as a failure: ${r.stderr}`);
  t.match(JSON.parse(r.stdout), { approval: { id: sub.data.approval.id, state: 'approved' }, engine: { mode: 'shared', delivered: false, reason: 'SC_ENGINE_BUSY' } });
  const again = await cli(sb, ['--project', sb.project, '--json', 'approvals', 'approve', sub.data.approval.id]);
  t.equal(JSON.parse(again.stdout).error.code, 'SC_APPROVAL_NOT_PENDING', 'it is recorded: a second approve is refused');
  t.equal(stateOf(sb, sub.data.job.id), 'queued', 'the store already says queued');
  t.notOk(existsSync(join(sb.project, 'ran.txt')), 'the engine has not heard of it yet');

  // One socket frees: the engine re-reads the decisions it waits for, and runs the job.
  held.pop()!.sock.destroy();
  await until(() => stateOf(sb, sub.data.job.id) === 'succeeded', 30000);
  t.equal(readFileSync(join(sb.project, 'ran.txt'), 'utf8'), 'ran\n', 'the approved command ran');
});
