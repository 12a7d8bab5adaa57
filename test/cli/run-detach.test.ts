// run --detach, with real processes: with a shared engine running, the task is handed to
// it and outlives the command that started it (its approval is listed and decided from
// new processes, and it finishes); without one, nothing is started and the error says
// to start the engine.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { startEngine } from '../fixtures/engine.js';
import { cli, sandbox, spawnCli, until } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { startFakeModel } from '../fixtures/fake-model.js';

const script = [
  { tool_calls: [{ id: 'c1', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'echo detached > out.txt'] }) }], finish: 'tool_calls' },
  { tool_calls: [{ id: 'c2', name: 'finish', arguments: JSON.stringify({ summary: 'wrote out.txt' }) }], finish: 'stop' },
];

t.test('without a shared engine, run --detach starts nothing and says to start the engine', async (t) => {
  const sb = sandbox('detach-none');
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({ format: 'openai', script });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = await spawnCli(sb, ['--project', sb.project, 'run', '--detach', '--level', 'workspace', 'write out.txt']);
  t.equal(r.code, 1);
  t.match(r.stderr, /needs the shared engine.*shadowcode engine start.*\[SC_ENGINE_NOT_RUNNING\]/);
  const db = openDb(sb.profile, 5000);
  t.equal((db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n, 0, 'no job was created');
  db.close();
  t.equal(fake.requests.length, 0, 'the model was never asked');
});

t.test('with a shared engine, a detached task outlives the command that started it', async (t) => {
  const sb = sandbox('detach');
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({ format: 'openai', script });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const engine = await startEngine(t, sb);

  const r = await spawnCli(sb, ['--project', sb.project, '--json', 'run', '--detach', '--level', 'workspace', 'write out.txt']);
  t.equal(r.code, 0, r.stderr);
  const { job } = JSON.parse(r.stdout);
  t.match(job, { id: /^job_/, owner: /^detached:/, project: sb.project, ceiling: 'workspace' });
  // The command that started it has exited; the task goes on in the engine.
  let pending: any[] = [];
  await until(() => {
    const db = openDb(sb.profile, 5000);
    pending = db.prepare("SELECT id FROM approvals WHERE job_id = ? AND state = 'pending'").all(job.id) as any[];
    db.close();
    return pending.length === 1;
  }, 30000);
  const listed = JSON.parse((await spawnCli(sb, ['--project', sb.project, '--json', 'approvals'])).stdout);
  t.same(fields(listed.approvals, ['id', 'job_id', 'owner', 'kind']), [{ id: pending[0].id, job_id: job.id, owner: job.owner, kind: 'command' }], 'approvals lists it, and nothing else');
  t.same(listed.approvals[0].action.argv, ['sh', '-c', 'echo detached > out.txt'], 'with its exact argv');
  const status = JSON.parse((await spawnCli(sb, ['--json', 'engine', 'status'])).stdout);
  t.same(fields(status.jobs, ['id', 'state', 'owner']), [{ id: job.id, state: 'waiting_approval', owner: job.owner }], 'engine status lists it, and no other job');
  t.equal(status.engine.pid, engine.pid);

  const ok = await spawnCli(sb, ['--project', sb.project, 'approvals', 'approve', pending[0].id]);
  t.equal(ok.code, 0, ok.stderr);
  await until(() => {
    const db = openDb(sb.profile, 5000);
    const s = (db.prepare('SELECT state FROM jobs WHERE id = ?').get(job.id) as { state: string }).state;
    db.close();
    return s === 'succeeded';
  }, 30000);
  t.ok(existsSync(join(sb.project, 'out.txt')));
  t.equal(readFileSync(join(sb.project, 'out.txt'), 'utf8'), 'detached\n', 'the approved command ran after its starter was gone');
});
