// shadow_run with a shared engine running: the task runs in the engine
// process (not the server's), an approval through shadow_approve reaches it at
// once, and when the owning server is killed its socket's end cancels the task
// and its command's process group, in the engine.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { startEngine } from '../fixtures/engine.js';
import { alive, cli, pidsOf, recordPid, sandbox, until } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { connect } from '../fixtures/mcp.js';


t.test('a build task runs in the shared engine; the server going away cancels it there', async (t) => {
  const sb = sandbox('shared-run');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'n.txt'), '1\n');
  const long = JSON.stringify({ argv: ['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`] });
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'c1', name: 'write_file', arguments: JSON.stringify({ path: 'n.txt', content: '2\n' }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'c2', name: 'finish', arguments: JSON.stringify({ summary: 'n is 2' }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'c3', name: 'run_command', arguments: long }], finish: 'tool_calls' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const engine = await startEngine(t, sb);
  const c = await connect(sb, 'v2-modern', ['--allow-write', '--allow-approvals']);

  const first = await call(c, 'shadow_run', { prompt: 'set n to 2', mode: 'build', permission_level: 'workspace' });
  t.match((await nextStop(c, first.job_id)).answer, { state: 'succeeded', summary: 'n is 2' });
  t.equal(readFileSync(join(sb.project, 'n.txt'), 'utf8'), '2\n');

  const second = await call(c, 'shadow_run', { prompt: 'run long', mode: 'build', permission_level: 'workspace' });
  const stop = await nextStop(c, second.job_id);
  await call(c, 'shadow_approve', { approval_id: stop.approvals[0].id, decision: 'approve' });
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2);
  const pids = pidsOf(join(sb.project, 'pids'));
  const status = await call(c, 'shadow_status');
  t.match(status.engine, { mode: 'shared', pid: engine.pid }, 'the server forwards to the shared engine');
  const serverPid = Number(status.connection.owner.split(':')[1]);
  process.kill(serverPid, 'SIGKILL');
  await until(() => !pids.some(alive), 10000);
  t.ok(!pids.some(alive), "the task's command group is gone");
  t.ok(alive(engine.pid), 'the shared engine keeps running');
  t.equal(fake.requests.length, 3);
});
