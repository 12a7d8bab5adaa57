// A server whose shared engine dies (SIGKILL) or is stopped, with real processes: it
// notices at once, records its jobs there as cancelled, never reports the gone pid,
// and runs new jobs in its own engine. engine stop counts only the jobs it cancelled:
// a job of a server that runs its own engine is neither listed nor counted. The engines
// and servers are real processes; `engine stop` and `engine status` are only their
// clients over the socket and the store, and run in this process.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call } from '../fixtures/agent-e2e.js';
import { startEngine } from '../fixtures/engine.js';
import { alive, cli, pidsOf, recordPid, sandbox, until } from '../fixtures/env.js';
import { connect } from '../fixtures/mcp.js';

const long = (file: string) => ['sh', '-c', `sleep 60 & ${recordPid('$!', file)}; ${recordPid('$$', file)}; wait`];

for (const how of ['SIGKILL', 'engine stop'] as const) {
  t.test(`after ${how} of its engine a serving mcp serve settles its job, drops the pid and runs new jobs itself`, async (t) => {
    const sb = sandbox('loss');
    await cli(sb, ['--project', sb.project, 'trust']);
    const engine = await startEngine(t, sb);
    const peer = await connect(sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
    t.teardown(() => peer.close());
    t.match((await call(peer, 'shadow_status')).engine, { mode: 'shared', pid: engine.pid });

    const sub = await call(peer, 'shadow_test', { command: long('pids') });
    await call(peer, 'shadow_approve', { approval_id: sub.approval.id, decision: 'approve' });
    await until(() => pidsOf(join(sb.project, 'pids')).length === 2, 30000);
    t.equal((await call(peer, 'shadow_jobs', { action: 'events', job_id: sub.job_id, limit: 1 })).job.state, 'running');

    if (how === 'SIGKILL') engine.child.kill('SIGKILL');
    else t.equal((await cli(sb, ['engine', 'stop'])).code, 0);
    await engine.exited;
    // Noticed through the closed ownership socket, without the client asking anything first.
    await until(() => /shared engine \(pid \d+\) is gone/.test(peer.stderr()), 15000);
    t.match(peer.stderr(), new RegExp(`shared engine \\(pid ${engine.pid}\\) is gone`), 'the server says what happened on stderr');
    const after = await call(peer, 'shadow_jobs', { action: 'events', job_id: sub.job_id, limit: 50 });
    // Once seen 'running' here under load: the engine, collected by this process between the server's two probes, counted as alive.
    t.equal(after.job.state, 'cancelled', 'its job is not shown running', { stderr: peer.stderr(), events: after.events });
    const status = (await call(peer, 'shadow_status')).engine;
    t.equal(status.mode, 'temporary');
    t.equal(status.pid, null, 'the gone pid is never reported');
    t.match(status.lost_shared, { pid: engine.pid });
    const pids = pidsOf(join(sb.project, 'pids'));
    await until(() => !pids.some(alive), 10000);

    // A new engine started meanwhile is not adopted: this server says temporary, not a stale or new pid.
    const second = await startEngine(t, sb);
    t.match((await call(peer, 'shadow_status')).engine, { mode: 'temporary', pid: null });

    // New work runs in the server's own engine instead of failing SC_ENGINE_NOT_RUNNING.
    const next = await call(peer, 'shadow_test', { command: ['sh', '-c', 'echo again > again.txt'] });
    await call(peer, 'shadow_approve', { approval_id: next.approval.id, decision: 'approve' });
    await until(() => existsSync(join(sb.project, 'again.txt')), 30000);
    const st = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
    t.equal(st.engine.pid, second.pid);
    t.notOk(st.jobs.some((j: any) => j.id === next.job_id), "the new engine does not list the server's own job");
  });
}

t.test("engine stop counts only its own cancelled jobs, not a job of a server's own engine", async (t) => {
  const sb = sandbox('stop-count');
  await cli(sb, ['--project', sb.project, 'trust']);
  // The server starts before the engine, so its jobs run in its own process.
  const peer = await connect(sb, 'v1', ['--allow-write', '--allow-approvals']);
  t.teardown(() => peer.close());
  const sub = await call(peer, 'shadow_test', { command: long('pids') });
  await call(peer, 'shadow_approve', { approval_id: sub.approval.id, decision: 'approve' });
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2, 30000);
  await startEngine(t, sb);
  const st = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
  t.same(st.jobs, [], "the engine does not list the server's job");
  const stop = await cli(sb, ['--json', 'engine', 'stop']);
  t.equal(stop.code, 0, stop.stderr);
  t.match(JSON.parse(stop.stdout), { stopped: true, cancelled_jobs: 0 }, 'nothing it did not cancel is counted');
  t.equal((await call(peer, 'shadow_jobs', { action: 'events', job_id: sub.job_id, limit: 1 })).job.state, 'running', "the server's job still runs");
  t.ok(pidsOf(join(sb.project, 'pids')).every(alive));
  await call(peer, 'shadow_jobs', { action: 'cancel', job_id: sub.job_id }).catch(() => {});
});
