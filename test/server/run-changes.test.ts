// mcp serve, driven by an MCP host (the official SDK client): what a task's approved
// command and a shadow_test job change in the project is a change of the task (the
// scenario of issue 41, test/fixtures/command-changes.ts). The next approvals list
// those files with the warning and its diff; shadow_review, shadow_why and
// shadow_rollback see them. A shadow_test with task_id is approved with that task's
// changes; one without a task reports its own changes in its events and its review.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { CHANGED, calls, checkMakeApproval, checkNpmApproval, checkPlanted, checkRolledBack, MANIFEST_DIFF, plant, SMOKE } from '../fixtures/command-changes.js';
import { cli, sandbox, sleep } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { connect } from '../fixtures/mcp.js';

const FLAGS = ['--allow-write', '--allow-approvals'];

function steps(list: ReturnType<typeof calls>) {
  return list.map((c, i) => ({ tool_calls: [{ id: `c${i}`, name: c.name, arguments: JSON.stringify(c.arguments) }], finish: 'tool_calls' }));
}

/** Follows a job through shadow_jobs until it has ended. */
async function ended(c: Parameters<typeof call>[0], jobId: string, ms = 30000): Promise<{ job: any; events: any[] }> {
  const end = Date.now() + ms;
  for (;;) {
    const r = await call(c, 'shadow_jobs', { action: 'events', job_id: jobId, limit: 100 });
    if (['succeeded', 'failed', 'cancelled'].includes(r.job.state)) return r;
    if (Date.now() > end) throw new Error(`job ${jobId} is still ${r.job.state}`);
    await sleep(50);
  }
}

async function project(t: any, name: string, script: ReturnType<typeof calls>) {
  const sb = sandbox(name);
  await cli(sb, ['--project', sb.project, 'trust']);
  plant(sb.project);
  const fake = await startFakeModel({ format: 'openai', script: steps(script) });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const c = await connect(sb, 'v2-modern', FLAGS);
  t.teardown(() => c.close());
  return { sb, c };
}

t.test('shadow_run: the approved test run changes files; the next npm test and make approvals warn with the diff; review, why and rollback see them', async (t) => {
  const { sb, c } = await project(t, 'mcp-run-changes', calls(['node', 'test/smoke.test.js']));
  const started = await call(c, 'shadow_run', { prompt: 'add a smoke test and run it', mode: 'build', permission_level: 'workspace' });
  const first = await nextStop(c, started.job_id);
  t.same(first.approvals[0].action.changed_files, ['test/smoke.test.js']);
  await call(c, 'shadow_approve', { approval_id: first.approvals[0].id, decision: 'approve' });
  const second = await nextStop(c, started.job_id);
  checkPlanted(t, sb.project);
  t.same(second.approvals[0].action.argv, ['npm', 'test']);
  checkNpmApproval(t, second.approvals[0].action);
  await call(c, 'shadow_approve', { approval_id: second.approvals[0].id, decision: 'deny' });
  let third = await nextStop(c, started.job_id);
  while (third.approvals[0]?.id === second.approvals[0].id) third = await nextStop(c, started.job_id);
  t.same(third.approvals[0].action.argv, ['make']);
  checkMakeApproval(t, third.approvals[0].action);
  await call(c, 'shadow_approve', { approval_id: third.approvals[0].id, decision: 'deny' });
  await ended(c, started.job_id);

  const review = await call(c, 'shadow_review', { task_id: started.job_id });
  t.same(review.files.map((f: { path: string }) => f.path).sort(), CHANGED, 'shadow_review lists every file');
  t.match(review.files.find((f: { path: string }) => f.path === 'package.json'), { status: 'modified', diff: MANIFEST_DIFF });
  const why = await call(c, 'shadow_why', { path: 'package.json' });
  t.match(why.changes, [{ task_id: started.job_id, why: 'changed by the approved command ["node","test/smoke.test.js"]' }]);
  const rolled = await call(c, 'shadow_rollback', { task_id: started.job_id, confirm: true });
  t.same(rolled.restored.sort(), CHANGED);
  checkRolledBack(t, sb.project);
});

t.test('shadow_test with task_id: approved with what the task changed, and what the run changes is the task\'s', async (t) => {
  // The task only adds the test; the host then verifies it with shadow_test.
  const { sb, c } = await project(t, 'mcp-test-changes', [calls([])[0]!, calls([])[4]!]);
  const started = await call(c, 'shadow_run', { prompt: 'add a smoke test', mode: 'build', permission_level: 'workspace' });
  t.match((await nextStop(c, started.job_id)).answer, { state: 'succeeded' });
  const task = started.job_id;

  const run = await call(c, 'shadow_test', { command: ['node', 'test/smoke.test.js'], task_id: task });
  t.same(run.approval.changed_files, ['test/smoke.test.js'], "the approval lists the task's changed files");
  t.same(run.approval.runs_changed, [{ path: 'test/smoke.test.js', reason: 'the command names test/smoke.test.js, which this task changed', diff: `--- /dev/null\n+++ b/test/smoke.test.js\n@@ -1,0 +1,${SMOKE.split('\n').length - 1} @@\n${SMOKE.replace(/^/gm, '+').replace(/\+$/, '')}` }], 'and that the command runs the file the task added, with its content');
  t.match(run.approval.notice, /^This command runs code this task changed/);
  await call(c, 'shadow_approve', { approval_id: run.approval.id, decision: 'approve' });
  const done = await ended(c, run.job_id);
  t.equal(done.job.state, 'succeeded');
  checkPlanted(t, sb.project);
  t.match(done.events.find((e: { kind: string }) => e.kind === 'files_changed')?.body, { via: 'test', recorded_on: task, changed: [{ path: 'Makefile', kind: 'added' }] }, 'the test job says what it changed, and on which task it is recorded');

  const again = await call(c, 'shadow_test', { command: ['npm', 'test'], task_id: task });
  checkNpmApproval(t, again.approval);
  t.match(again.next, /the warning with its diffs/);
  await call(c, 'shadow_approve', { approval_id: again.approval.id, decision: 'deny' });
  const make = await call(c, 'shadow_test', { command: ['make'], task_id: task });
  checkMakeApproval(t, make.approval);
  await call(c, 'shadow_approve', { approval_id: make.approval.id, decision: 'deny' });

  const review = await call(c, 'shadow_review', { task_id: task });
  t.same(review.files.map((f: { path: string }) => f.path).sort(), CHANGED, "the run's changes are the task's");
  t.match(review.verification, [{ job_id: run.job_id, state: 'succeeded' }]);
  const why = await call(c, 'shadow_why', { path: 'Makefile' });
  t.match(why.changes, [{ task_id: task, why: `changed by test job ${run.job_id} ["node","test/smoke.test.js"]` }]);
  t.same((await call(c, 'shadow_rollback', { task_id: task, confirm: true })).restored.sort(), CHANGED);
  checkRolledBack(t, sb.project);
});

t.test('shadow_test without a task: its changes are in its events and in review JOB, and roll back with it', async (t) => {
  const { sb, c } = await project(t, 'mcp-test-alone', []);
  writeFileSync(join(sb.project, 'test', 'smoke.test.js'), SMOKE);
  const run = await call(c, 'shadow_test', { command: ['node', 'test/smoke.test.js'] });
  t.same(Object.keys(run.approval).sort(), ['argv', 'cwd', 'id', 'kind'], 'no task: nothing changed so far to show');
  await call(c, 'shadow_approve', { approval_id: run.approval.id, decision: 'approve' });
  const done = await ended(c, run.job_id);
  checkPlanted(t, sb.project);
  const changed = done.events.find((e: { kind: string }) => e.kind === 'files_changed')?.body;
  t.same(changed?.changed.map((f: { path: string; kind: string }) => `${f.kind} ${f.path}`), ['added Makefile', 'modified package.json', 'added sub/.claude/settings.json', 'deleted test/smoke.test.js'], 'the job events name what it changed');
  const review = await call(c, 'shadow_review', { task_id: run.job_id });
  t.same(review.files.map((f: { path: string; status: string }) => `${f.status} ${f.path}`), ['added Makefile', 'modified package.json', 'added sub/.claude/settings.json', 'deleted test/smoke.test.js'], 'review JOB shows them');
  const cliReview = await cli(sb, ['--project', sb.project, 'review', run.job_id]);
  t.match(cliReview.stdout, /modified package\.json\n--- a\/package\.json/);
  t.same((await call(c, 'shadow_rollback', { task_id: run.job_id, confirm: true })).restored.sort(), CHANGED);
  t.equal((await cli(sb, ['--project', sb.project, 'jobs'])).code, 0);
});
