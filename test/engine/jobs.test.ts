// Owned jobs with real processes: approval, output, cancellation of whole
// process groups, the sanitised environment, and the per-owner limits.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { processesWith } from '../fixtures/mcp-client.js';
import { alive, cli, connection, sandbox, sleep, until } from '../fixtures/env.js';


async function setup(t: any, flags = { allowWrite: true, allowApprovals: true }, env: NodeJS.ProcessEnv = {}) {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  Object.assign(sb.env, env);
  const c = await connection(sb, flags);
  t.teardown(async () => c.engine.shutdown());
  const state = async (id: string) => (await c.call('shadow_jobs', { action: 'events', job_id: id, limit: 100 })).data;
  return { sb, ...c, state };
}

t.test('a test job waits for approval of its exact command, then runs it and reports output and status', async (t) => {
  const { call, state } = await setup(t);
  const sub = await call('shadow_test', { command: ['sh', '-c', 'echo out-line; echo err-line >&2; exit 3'] });
  t.equal(sub.data.state, 'waiting_approval');
  t.same(sub.data.approval.argv, ['sh', '-c', 'echo out-line; echo err-line >&2; exit 3']);
  const pending = await call('shadow_jobs', { action: 'approvals', job_id: sub.data.job_id });
  t.equal(pending.data.approvals[0].id, sub.data.approval.id);
  await call('shadow_approve', { approval_id: sub.data.approval.id, decision: 'approve' });
  let s: any;
  for (let i = 0; i < 200; i++) {
    s = await state(sub.data.job_id);
    if (['succeeded', 'failed', 'cancelled'].includes(s.job.state)) break;
    await sleep(25);
  }
  t.equal(s.job.state, 'failed');
  t.equal(s.job.exit_code, 3);
  t.ok(s.job.duration_ms >= 0);
  t.ok(s.events.some((e: any) => e.kind === 'stdout' && e.body.text.includes('out-line')));
  t.ok(s.events.some((e: any) => e.kind === 'stderr' && e.body.text.includes('err-line')));
  const again = await call('shadow_approve', { approval_id: sub.data.approval.id, decision: 'approve' });
  t.equal(again.data.error.code, 'SC_APPROVAL_NOT_PENDING', 'one approval approves once');
});

t.test('an approval does not carry over to a different argv', async (t) => {
  const { call, state } = await setup(t);
  const one = await call('shadow_test', { command: ['echo', 'one'] });
  const two = await call('shadow_test', { command: ['echo', 'two'] });
  await call('shadow_approve', { approval_id: one.data.approval.id, decision: 'approve' });
  for (let i = 0; i < 200 && (await state(one.data.job_id)).job.state !== 'succeeded'; i++) await sleep(25);
  const s1 = await state(one.data.job_id);
  t.equal(s1.job.state, 'succeeded');
  t.match(s1.events.filter((e: any) => e.kind === 'stdout').map((e: any) => e.body.text).join(''), /^one\n$/);
  t.equal((await state(two.data.job_id)).job.state, 'waiting_approval', 'the other command still waits');
  const denied = await call('shadow_approve', { approval_id: two.data.approval.id, decision: 'deny' });
  t.equal(denied.data.approval.state, 'denied');
  for (let i = 0; i < 100 && (await state(two.data.job_id)).job.state !== 'cancelled'; i++) await sleep(20);
  t.equal((await state(two.data.job_id)).job.state, 'cancelled', 'a denied command never runs');
});

t.test('cancelling a long-running command kills its whole process group', async (t) => {
  const { call, state, sb } = await setup(t);
  // Pids inside the sandbox are its own PID namespace's: the host's process table is searched by a marker instead.
  const mark = `jobs-group-${process.pid}-${Date.now()}`;
  const script = `sh -c 'sleep 60; : ${mark}-a' & sh -c 'sh -c "sleep 60; : ${mark}-b"; :' & echo started > started; wait`;
  const sub = await call('shadow_test', { command: ['sh', '-c', script] });
  await call('shadow_approve', { approval_id: sub.data.approval.id, decision: 'approve' });
  await until(() => existsSync(join(sb.project, 'started')) && processesWith(`${mark}-b`).length >= 1 && processesWith(`${mark}-a`).length >= 1);
  t.ok(processesWith(mark).length >= 3, 'the command and its children run');
  const r = await call('shadow_jobs', { action: 'cancel', job_id: sub.data.job_id });
  t.equal(r.data.job.state, 'cancelled');
  await until(() => processesWith(mark).length === 0, 3000);
  t.same(processesWith(mark), [], 'no process of the group survives');
  t.ok((await state(sub.data.job_id)).events.some((e: any) => e.kind === 'exit' && e.body.cancelled === true));
});

t.test('a job runs with the sanitised environment, in the project directory', async (t) => {
  const { call, state, sb } = await setup(t, undefined, { MY_SERVICE_TOKEN: 'env-canary-123456', LD_PRELOAD: '/tmp/evil.so', LANG: 'C.UTF-8' });
  const sub = await call('shadow_test', { command: ['sh', '-c', 'env; pwd'] });
  await call('shadow_approve', { approval_id: sub.data.approval.id, decision: 'approve' });
  for (let i = 0; i < 200 && (await state(sub.data.job_id)).job.state !== 'succeeded'; i++) await sleep(25);
  const out = (await state(sub.data.job_id)).events.filter((e: any) => e.kind === 'stdout').map((e: any) => e.body.text).join('');
  t.match(out, /^PATH=/m);
  t.match(out, /^LANG=C\.UTF-8$/m);
  t.notMatch(out, /MY_SERVICE_TOKEN|env-canary|LD_PRELOAD|SHADOWCODE_HOME/);
  t.match(out, new RegExp(`^${sb.project}$`, 'm'));
});

t.test('shadow_test needs write access; without a command exactly one must be detected', async (t) => {
  const sb = sandbox();
  const ro = await connection(sb);
  t.match((await ro.call('shadow_test', { command: ['true'] })).text, /SC_POLICY_DENIED: tool:shadow_test denied by write-needs-flag/);
  await ro.engine.shutdown();
  await cli(sb, ['--project', sb.project, 'trust']);
  const rw = await connection(sb, { allowWrite: true });
  t.teardown(() => rw.engine.shutdown());
  t.match((await rw.call('shadow_test')).data.error, { code: 'SC_TEST_COMMAND_UNKNOWN', message: /no test command was detected/ });
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(sb.project, 'package.json'), '{"scripts":{"test":"tap"}}');
  writeFileSync(join(sb.project, 'Makefile'), 'test:\n\ttrue\n');
  const two = (await rw.call('shadow_test')).data.error;
  t.equal(two.code, 'SC_TEST_COMMAND_UNKNOWN');
  t.same(two.detail.candidates.map((c: any) => c.argv.join(' ')), ['npm test', 'make test']);
  const { rmSync } = await import('node:fs');
  rmSync(join(sb.project, 'Makefile'));
  const one = (await rw.call('shadow_test')).data;
  t.same(one.approval.argv, ['npm', 'test']);
  t.match((await rw.call('shadow_approve', { approval_id: one.approval.id, decision: 'approve' })).text, /denied by approve-needs-flag/, 'approving needs --allow-approvals');
  t.equal((await rw.call('shadow_approve', { approval_id: one.approval.id, decision: 'deny' })).isError, false, 'denying needs only ownership');
});

t.test('approvals and jobs are isolated between owners', async (t) => {
  const { sb, call } = await setup(t);
  const other = await connection(sb, { allowWrite: true, allowApprovals: true });
  t.teardown(() => other.engine.shutdown());
  const mine = (await call('shadow_test', { command: ['echo', 'mine'] })).data;
  const steal = await other.call('shadow_approve', { approval_id: mine.approval.id, decision: 'approve' });
  t.match(steal.text, /denied by own-jobs-only/);
  t.match((await other.call('shadow_jobs', { action: 'events', job_id: mine.job_id })).text, /own-jobs-only/);
  t.match((await other.call('shadow_jobs', { action: 'cancel', job_id: mine.job_id })).text, /own-jobs-only/);
  t.same((await other.call('shadow_jobs', { action: 'list' })).data.jobs, [], "another owner's jobs are not listed");
  t.equal((await call('shadow_jobs', { action: 'list' })).data.jobs.length, 1);
  t.match((await other.call('shadow_approve', { approval_id: 'appr_nope', decision: 'deny' })).text, /own-jobs-only/, 'an unknown id is refused the same way');
});

t.test('the CLI user approves any owner\'s pending action in the project', async (t) => {
  const { sb, call, state } = await setup(t, { allowWrite: true, allowApprovals: false });
  const sub = (await call('shadow_test', { command: ['echo', 'approved-by-cli'] })).data;
  const list = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'approvals'])).stdout);
  t.equal(list.approvals[0].id, sub.approval.id);
  t.same(list.approvals[0].action.argv, ['echo', 'approved-by-cli']);
  const ok = await cli(sb, ['--project', sb.project, 'approvals', 'approve', sub.approval.id]);
  t.equal(ok.code, 0, ok.stderr);
  for (let i = 0; i < 200 && (await state(sub.job_id)).job.state !== 'succeeded'; i++) await sleep(25);
  t.equal((await state(sub.job_id)).job.state, 'succeeded', 'the owning engine saw the decision and ran it');
  const elsewhere = sandbox();
  const wrong = await cli({ ...elsewhere, env: sb.env }, ['--project', elsewhere.project, 'approvals', 'deny', sub.approval.id]);
  t.match(wrong.stderr, /\[SC_APPROVAL_NOT_FOUND\]/, 'an approval of another project is not found from here');
});

t.test('at most 64 jobs over an owner\'s lifetime', async (t) => {
  const { call } = await setup(t);
  for (let i = 0; i < 64; i++) t.equal((await call('shadow_test', { command: ['true'] })).isError, false);
  t.equal((await call('shadow_test', { command: ['true'] })).data.error.code, 'SC_LIMIT_REACHED');
});
