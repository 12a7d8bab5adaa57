// shadowcode jobs, review, why and rollback over tasks that two separate `run`
// processes (two owners) made against the fake model. The history commands run
// in this process through main(), the built CLI's own entry: each is a fresh
// command over the same profile, without a process start apiece.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { startFakeModel } from '../fixtures/fake-model.js';

const edit = (id: string, path: string, from: string, to: string) => ({ tool_calls: [{ id, name: 'edit_file', arguments: JSON.stringify({ path, old_text: from, new_text: to }) }] });
const finish = (summary: string) => ({ tool_calls: [{ id: 'f', name: 'finish', arguments: JSON.stringify({ summary }) }] });

t.test('jobs lists every owner\'s tasks with their answer; review, why and rollback work on one of them from the terminal', async (t) => {
  const sb = sandbox('cli-history');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'a.txt'), 'one\ntwo\n');
  writeFileSync(join(sb.project, 'b.txt'), 'bee\n');
  const fake = await startFakeModel({ format: 'openai', script: [edit('e1', 'a.txt', 'two', 'TWO'), finish('made two loud'), edit('e2', 'b.txt', 'bee', 'BEE'), finish('made bee loud')] });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const ws = ['--project', sb.project];
  const first = await spawnCli(sb, [...ws, '--json', 'run', '--level', 'workspace', 'make two loud']);
  t.equal(first.code, 0, first.stderr);
  const second = await spawnCli(sb, [...ws, 'run', '--level', 'workspace', 'make bee loud']);
  t.equal(second.code, 0, second.stderr);
  const task = JSON.parse(first.stdout.split('\n').filter(Boolean)[0] as string).job_id as string;

  const jobs = await cli(sb, [...ws, '--json', 'jobs']);
  t.equal(jobs.code, 0, jobs.stderr);
  const listed = JSON.parse(jobs.stdout).jobs as Array<{ id: string; owner: string; state: string; answer: { summary: string } }>;
  t.equal(listed.length, 2, 'both tasks are listed');
  t.not(listed[0]!.owner, listed[1]!.owner, 'of two different owners');
  t.match(listed.find((j) => j.id === task), { state: 'succeeded', answer: { summary: 'made two loud' } });
  const jobsText = await cli(sb, [...ws, 'jobs']);
  t.match(jobsText.stdout, new RegExp(`${task}\\s+task\\s+succeeded\\s+cli:\\d+:\\w+\\s+.*made two loud`));

  const review = await cli(sb, [...ws, 'review', task]);
  t.equal(review.code, 0, review.stderr);
  t.match(review.stdout, /modified a\.txt\n--- a\/a\.txt\n\+\+\+ b\/a\.txt\n@@.*\n one\n-two\n\+TWO\n/);
  t.notMatch(review.stdout, /b\.txt/, 'only this task\'s files');
  const reviewJson = JSON.parse((await cli(sb, [...ws, '--json', 'review', task])).stdout);
  t.match(reviewJson, { task_id: task, rolled_back: false });
  t.same(fields(reviewJson.files, ['path', 'status']), [{ path: 'a.txt', status: 'modified' }], "only this task's file");

  const why = JSON.parse((await cli(sb, [...ws, '--json', 'why', 'a.txt'])).stdout);
  t.equal(why.path, 'a.txt');
  t.same(fields(why.changes, ['task_id', 'kind']), [{ task_id: task, kind: 'write' }], 'one change: the task\'s write');
  const whyOut = await cli(sb, [...ws, 'why', '../outside.txt']);
  t.equal(whyOut.code, 1);
  t.match(whyOut.stderr, /SC_PATH_OUTSIDE/);

  const unasked = await cli(sb, [...ws, 'rollback', task]);
  t.equal(unasked.code, 2, 'without a terminal, rollback needs --yes');
  t.match(unasked.stderr, /add --yes.*\[SC_USAGE\]/);
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'one\nTWO\n', 'nothing was rolled back');
  const rolled = await cli(sb, [...ws, '--json', 'rollback', '--yes', task]);
  t.equal(rolled.code, 0, rolled.stderr);
  t.same(JSON.parse(rolled.stdout), { task_id: task, restored: ['a.txt'] });
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'one\ntwo\n');
  t.equal(readFileSync(join(sb.project, 'b.txt'), 'utf8'), 'BEE\n', "the other task's change stays");
  const again = await cli(sb, [...ws, 'rollback', '--yes', task]);
  t.equal(again.code, 1);
  t.match(again.stderr, new RegExp(`task ${task} was already rolled back at \\S+: its files are as they were before it; nothing was changed \\[SC_ALREADY_ROLLED_BACK\\]`), 'a second rollback says it was done, not that the files changed');
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'one\ntwo\n');
  writeFileSync(join(sb.project, 'a.txt'), 'edited by hand\n');
  const edited = await cli(sb, [...ws, 'rollback', '--yes', task]);
  t.equal(edited.code, 1);
  t.match(edited.stderr, /was rolled back at \S+, and since then a\.txt changed; nothing was rolled back \[SC_ROLLBACK_CONFLICT\]/, 'a file changed since is a conflict, not a silent overwrite');
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'edited by hand\n');
  const unknown = await cli(sb, [...ws, 'review', 'job_nope']);
  t.match(unknown.stderr, /SC_TASK_NOT_FOUND/);

  const audit = await cli(sb, [...ws, '--json', 'audit', 'verify']);
  t.equal(audit.code, 0, 'the decisions are in an intact audit chain');
});
