// Two stdio servers of one profile on one running shared engine: one queue for
// both, and a SIGKILLed server takes only its own work with it.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { getJob } from '../../src/engine/jobs.js';
import { openDb } from '../../src/store/db.js';
import { alive, cli, pidsOf, recordPid, type Sandbox, sandbox, sleep, until } from '../fixtures/env.js';
import { type EngineProc, startEngine } from '../fixtures/engine.js';
import { httpClient, startGateway } from '../fixtures/http.js';
import { connect, type Peer } from '../fixtures/mcp.js';

const long = (n: number) => ['sh', '-c', `sleep 60 & ${recordPid('$!', `pids-${n}`)}; ${recordPid('$$', `pids-${n}`)}; wait`];

async function submitApproved(c: Peer, argv: string[]): Promise<string> {
  const sub = (await c.callTool({ name: 'shadow_test', arguments: { command: argv } })).structuredContent;
  const r = await c.callTool({ name: 'shadow_approve', arguments: { approval_id: sub.approval.id, decision: 'approve' } });
  if (r.isError) throw new Error(r.content[0].text);
  return sub.job_id;
}

/** Process ids whose process group is `pgid`, from the process table. */
function groupMembers(pgid: number): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,pgid='], { encoding: 'utf8' }).stdout;
  return ps.split('\n').map((l) => l.trim().split(/\s+/).map(Number)).filter(([, g]) => g === pgid).map(([p]) => p as number);
}

/** The processes of group `pgid` that still run: an exited orphan waiting for init to reap it counts as gone (see alive). */
const runningIn = (pgid: number) => groupMembers(pgid).filter(alive);

/** The process group of `pid`, from the process table. */
function groupOf(pid: number): number {
  return Number(spawnSync('ps', ['-o', 'pgid=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim());
}

// The approval test and the HTTP gateway test share a trusted profile, its engine and a
// stdio server (the gateway test's other owner): each looks only at jobs of its own. The
// first test counts every owner and job of its engine, so it has one to itself.
let shared: { sb: Sandbox; engine: EngineProc; stdio: Peer };
t.before(async () => {
  const sb = sandbox('shared');
  await cli(sb, ['--project', sb.project, 'trust']);
  const engine = await startEngine(t, sb);
  const stdio = await connect(sb, 'v2-legacy', ['--allow-write']);
  t.teardown(() => stdio.close());
  shared = { sb, engine, stdio };
});

t.test('two stdio servers share one engine; SIGKILL of one cancels only its work', async (t) => {
  const sb = sandbox('shared');
  await cli(sb, ['--project', sb.project, 'trust']);
  const engine = await startEngine(t, sb);
  const a = await connect(sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
  const b = await connect(sb, 'v1', ['--allow-write', '--allow-approvals']);
  t.teardown(() => b.close());
  for (const c of [a, b]) {
    const st = (await c.callTool({ name: 'shadow_status', arguments: {} })).structuredContent;
    t.match(st.engine, { mode: 'shared', pid: engine.pid }, 'shadow_status names the shared engine');
  }

  const a1 = await submitApproved(a, long(1));
  const a2 = await submitApproved(a, long(2));
  await until(() => pidsOf(join(sb.project, 'pids-1')).length === 2 && pidsOf(join(sb.project, 'pids-2')).length === 2);
  // Both runners are busy with a's jobs: a's third and b's job queue behind them, in the one queue.
  const a3 = await submitApproved(a, ['sh', '-c', 'echo ran > queued-ran']);
  const bJob = await submitApproved(b, ['sh', '-c', 'echo done > b-finished']);
  const db = openDb(sb.profile, 5000);
  t.equal(getJob(db, bJob)?.state, 'queued', "b's job waits in the shared queue behind a's, approved and queued");
  const st = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
  t.equal(st.owners.length, 2, 'the engine sees both servers as owners');
  t.equal(st.jobs.length, 4);

  const shellPids = [pidsOf(join(sb.project, 'pids-1'))[1], pidsOf(join(sb.project, 'pids-2'))[1]] as number[];
  // In the sandbox the group leader is the sandbox's own first process, not the shell: ask the table.
  const shells = shellPids.map(groupOf);
  t.not(shells[0], shells[1], 'each command has a process group of its own');
  const members = shells.flatMap(groupMembers);
  t.ok(members.length >= 4, 'each command runs as its own process group (the shell and its sleep)');
  const serverPid = Number((await a.callTool({ name: 'shadow_status', arguments: {} })).structuredContent.connection.owner.split(':')[1]);
  process.kill(serverPid, 'SIGKILL');

  // Polled with ps: a process the snapshot above missed would count too.
  await until(() => shells.every((g) => runningIn(g).length === 0), 10000);
  t.notOk(members.some(alive), "every process of the killed server's commands is gone");
  await until(() => existsSync(join(sb.project, 'b-finished')), 10000);
  // The file is written before the command's exit is recorded.
  await until(() => getJob(db, bJob)?.state !== 'running', 10000);
  t.equal((await b.callTool({ name: 'shadow_jobs', arguments: { action: 'events', job_id: bJob } })).structuredContent.job.state, 'succeeded', "the other server's job finished");
  await sleep(500);
  t.notOk(existsSync(join(sb.project, 'queued-ran')), "the killed server's queued job never ran");
  for (const id of [a1, a2, a3]) t.equal(getJob(db, id)?.state, 'cancelled', `${id} is recorded as cancelled`);
  t.ok(alive(engine.pid), 'the engine keeps running');
  db.close();
});

t.test('an approval from the CLI reaches the job through the engine at once', async (t) => {
  const { sb, stdio: c } = shared;
  const sub = (await c.callTool({ name: 'shadow_test', arguments: { command: ['sh', '-c', 'echo hi > approved-ran'] } })).structuredContent;
  const r = await cli(sb, ['--json', '--project', sb.project, 'approvals', 'approve', sub.approval.id]);
  t.equal(r.code, 0, r.stderr);
  t.match(JSON.parse(r.stdout), { approval: { state: 'approved' }, engine: { mode: 'shared' } });
  await until(() => existsSync(join(sb.project, 'approved-ran')));
  const ev = (await c.callTool({ name: 'shadow_jobs', arguments: { action: 'events', job_id: sub.job_id } })).structuredContent;
  t.ok(ev.events.some((e: { kind: string }) => e.kind === 'engine'), 'the job ran in the shared engine');
});

t.test('an HTTP gateway is one owner on the shared engine; stopping it cancels its job only', async (t) => {
  const { sb, engine, stdio } = shared;
  const gw = await startGateway(sb, ['--allow-write', '--allow-approvals']);
  t.teardown(() => gw.child.kill('SIGKILL'));
  const c = await httpClient(gw.url, 'v2-modern');
  t.match((await c.callTool({ name: 'shadow_status', arguments: {} })).structuredContent.engine, { mode: 'shared', pid: engine.pid });
  t.match(gw.stderr(), /jobs run in the shared engine/);
  const job = await submitApproved(c as unknown as Peer, long(9));
  await until(() => pidsOf(join(sb.project, 'pids-9')).length === 2);
  const pids = pidsOf(join(sb.project, 'pids-9'));
  const other = (await stdio.callTool({ name: 'shadow_test', arguments: { command: ['true'] } })).structuredContent.job_id;
  t.equal(await gw.stop(), 0, 'SIGTERM stops the gateway after its cleanup');
  const db = openDb(sb.profile, 5000);
  t.equal(getJob(db, job)?.state, 'cancelled', "the gateway's job is cancelled");
  await until(() => !pids.some(alive), 5000);
  t.notOk(pids.some(alive), 'and its command is gone');
  t.equal(getJob(db, other)?.state, 'waiting_approval', "another owner's job is untouched");
  db.close();
});
