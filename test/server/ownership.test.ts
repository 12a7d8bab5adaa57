// Owners end, their jobs end: a stdio server killed with SIGKILL leaves no
// running child and its queued jobs never start, while another owner's job
// finishes; end of input cancels and reaps a connection's jobs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Engine } from '../../src/engine/engine.js';
import { getJob } from '../../src/engine/jobs.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { alive, cli, pidsOf, recordPid, sandbox, sleep, until } from '../fixtures/env.js';
import { connect } from '../fixtures/mcp.js';


async function submitApproved(c: any, argv: string[]): Promise<string> {
  const sub = (await c.callTool({ name: 'shadow_test', arguments: { command: argv } })).structuredContent;
  const r = await c.callTool({ name: 'shadow_approve', arguments: { approval_id: sub.approval.id, decision: 'approve' } });
  if (r.isError) throw new Error(r.content[0].text);
  return sub.job_id;
}

t.test('SIGKILL of a stdio server: no child survives, its queued job never starts, another owner finishes', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const a = await connect(sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
  const b = await connect(sb, 'v1', ['--allow-write', '--allow-approvals']);
  t.teardown(() => b.close());
  const long = (n: number) => ['sh', '-c', `sleep 60 & ${recordPid('$!', `pids-${n}`)}; ${recordPid('$$', `pids-${n}`)}; wait`];
  const a1 = await submitApproved(a, long(1));
  const a2 = await submitApproved(a, long(2));
  // Two run at once; this one is approved but queued behind them.
  const a3 = await submitApproved(a, ['sh', '-c', 'echo ran > queued-ran']);
  await until(() => pidsOf(join(sb.project, 'pids-1')).length === 2 && pidsOf(join(sb.project, 'pids-2')).length === 2);
  const pids = [...pidsOf(join(sb.project, 'pids-1')), ...pidsOf(join(sb.project, 'pids-2'))];
  t.ok(pids.every(alive));
  const bJob = await submitApproved(b, ['sh', '-c', 'sleep 1; echo done > b-finished']);

  const serverPid = (await a.callTool({ name: 'shadow_status', arguments: {} })).structuredContent.connection.owner.split(':')[1];
  process.kill(Number(serverPid), 'SIGKILL');
  await until(() => !pids.some(alive), 5000);
  t.ok(!pids.some(alive), 'every process of the killed owner is gone');
  await until(() => existsSync(join(sb.project, 'b-finished')), 10000);
  await sleep(1000);
  t.notOk(existsSync(join(sb.project, 'queued-ran')), 'the queued job never started');
  const bState = (await b.callTool({ name: 'shadow_jobs', arguments: { action: 'events', job_id: bJob } })).structuredContent.job.state;
  t.equal(bState, 'succeeded', "the other owner's job finished");

  // The next engine to open the profile settles what the dead process left.
  const e = new Engine(sb.profile, shippedPolicy(), sb.env);
  e.jobs();
  for (const id of [a1, a2, a3]) t.equal(getJob(e.db(), id)?.state, 'cancelled', `${id} is recorded as cancelled`);
  await e.shutdown();
});

t.test('end of input cancels the connection\'s running job and reaps it before exit', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const a = await connect(sb, 'v2-legacy', ['--allow-write', '--allow-approvals']);
  const job = await submitApproved(a, ['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`]);
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2);
  const pids = pidsOf(join(sb.project, 'pids'));
  await a.close();
  await until(() => !pids.some(alive), 3000);
  t.ok(!pids.some(alive));
  const e = new Engine(sb.profile, shippedPolicy(), sb.env);
  t.equal(getJob(e.db(), job)?.state, 'cancelled');
  await e.shutdown();
});
