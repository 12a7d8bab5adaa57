// Background processes with an independent lifetime: they outlive the task that
// started them, are listed by engine status, only tasks with workspace authority
// may start or stop them, and stopping the engine stops them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { serveEngine } from '../../src/engine/daemon/server.js';
import { enforce } from '../../src/policy/gate.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { openDb } from '../../src/store/db.js';
import { alive, cli, sandbox, until } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';

t.test('a background process outlives its task until a writing task or engine stop ends it', async (t) => {
  const sb = sandbox('bg');
  await cli(sb, ['--project', sb.project, 'trust']);
  const policy = shippedPolicy();
  const db = openDb(sb.profile, 5000);
  const gate = { policy, db: () => db };
  const cliReq = { action: 'cli:engine.serve', principal: { kind: 'cli' as const, owner: 'cli', allow_write: true, allow_approvals: true }, project: null };
  const running = await enforce(gate, cliReq, (tk) => serveEngine(tk, { profileDir: sb.profile, policy, env: sb.env, log: () => {} }));
  if (!running) throw new Error('no engine');
  t.teardown(() => running.stop('teardown'));
  const jobs = running.engine.jobs();
  const owner = `stdio:${process.pid}:abcd`;
  const writer = jobs.submitTest(owner, sb.project, ['true'], 'workspace', null).job;
  const reader = jobs.submitTest(owner, sb.project, ['true'], 'read_only', null).job;
  const bg = running.engine.background();

  await t.rejects(bg.start(reader, ['sleep', '60']), { code: 'SC_POLICY_DENIED', message: /engine-needs-workspace-level/ }, 'a read-only task cannot start one');
  t.same(bg.list(), []);

  const pidFile = join(sb.project, 'bg.pid');
  // A relative path: the file lands in the project only if that is where it runs. ($$ is a pid of the
  // sandbox's own PID namespace, so the listed pid, bwrap's, is what the host can signal.)
  const entry = await bg.start(writer, ['sh', '-c', 'echo $$ > bg.pid; sleep 60 & wait']);
  await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
  t.match(readFileSync(pidFile, 'utf8'), /^\d+\n$/, 'it runs in the project');
  await jobs.cancel(writer.id);
  t.ok(alive(entry.pid), 'it outlives the task that started it');
  const st = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
  t.same(fields(st.background, ['id', 'pid', 'project', 'job_id']), [{ id: entry.id, pid: entry.pid, project: sb.project, job_id: writer.id }], 'engine status lists it, and only it');
  t.match((await cli(sb, ['engine', 'status'])).stdout, new RegExp(`${entry.id}\\s+pid ${entry.pid}`));

  await t.rejects(bg.stop(entry.id, reader), { code: 'SC_POLICY_DENIED' }, 'a read-only task cannot stop it');
  t.ok(alive(entry.pid));
  const other = jobs.submitTest(`stdio:${process.pid}:ef01`, sb.project, ['true'], 'workspace', null).job;
  await bg.stop(entry.id, other);
  t.notOk(alive(entry.pid), 'a writing task of the project stops it');
  t.same(bg.list(), []);

  const second = await bg.start(other, ['sh', '-c', 'sleep 60 & wait']);
  t.ok(alive(second.pid));
  await running.stop('test');
  t.notOk(alive(second.pid), 'stopping the engine stops what it kept running');
  db.close();
});
