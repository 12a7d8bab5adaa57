// What a task's background process changes is a change of that task: seen at the task's
// next approval (listed and warned about, with the diff), when the process is stopped, and
// at the task's end; after the end it is not recorded, and the end says which still run.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { getJob, type JobRow, pendingApprovals } from '../../src/engine/jobs.js';
import { decideAsCli } from '../fixtures/decide.js';
import { sql } from '../../src/store/db.js';
import { agentBench, scripted } from '../fixtures/agent.js';
import { until } from '../fixtures/env.js';

t.test("a background process's changes are its task's: at the next approval, when stopped, and at the task's end", async (t) => {
  const model = scripted([
    { calls: [{ name: 'run_command', arguments: { argv: ['true'] } }] },
    { calls: [{ name: 'run_command', arguments: { argv: ['make'] } }] },
    { calls: [{ name: 'finish', arguments: { summary: 'done' } }] },
  ]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const p = b.sb.project;
  writeFileSync(join(p, 'README'), 'hi\n');
  const db = b.engine.db();
  const job = b.submit('start a watcher');
  const pending = async () => {
    await until(() => pendingApprovals(db, { project: p, jobId: job.id }).length === 1, 20000);
    return pendingApprovals(db, { project: p, jobId: job.id })[0]!;
  };
  const first = await pending();
  const task = getJob(db, job.id) as JobRow;
  const bg = b.engine.background();
  const writer = await bg.start(task, ['sh', '-c', 'printf "all:\\n\\tevil\\n" > Makefile; while [ ! -e go ]; do sleep 0.05; done; echo late > late.txt; sleep 60']);
  await until(() => existsSync(join(p, 'Makefile')));
  decideAsCli({ policy: b.engine.policy, db }, first.id, 'approved');
  b.engine.jobs().sync();

  await until(() => pendingApprovals(db, { project: p, jobId: job.id }).some((a) => a.id !== first.id), 20000);
  const make = await pending();
  t.same(make.action.argv, ['make']);
  t.same(make.action.changed_files, ['Makefile'], 'the next approval lists what the background process wrote');
  t.same(make.action.runs_changed, [{ path: 'Makefile', reason: 'make reads Makefile, which this task changed, and runs its rules', diff: '--- /dev/null\n+++ b/Makefile\n@@ -1,0 +1,2 @@\n+all:\n+\tevil\n' }], 'and warns, with the diff');
  const why = sql(db, "SELECT why FROM changes WHERE job_id = ? AND path = 'Makefile'").get(job.id) as { why: string };
  t.match(why.why, `by its background process ${writer.id} ["sh","-c",`, 'why names the background process');

  // Written while nothing of the task looks: seen when the process is stopped.
  writeFileSync(join(p, 'go'), '');
  await until(() => existsSync(join(p, 'late.txt')));
  const before = (sql(db, 'SELECT count(*) AS n FROM changes WHERE job_id = ?').get(job.id) as { n: number }).n;
  await bg.stop(writer.id, task);
  const late = sql(db, "SELECT why FROM changes WHERE job_id = ? AND path IN ('go', 'late.txt') ORDER BY path").all(job.id) as Array<{ why: string }>;
  t.equal(late.length, 2, 'stopping it records what changed meanwhile');
  t.match(late[1]!.why, `changed while the task's background process ${writer.id} `);
  t.ok((sql(db, 'SELECT count(*) AS n FROM changes WHERE job_id = ?').get(job.id) as { n: number }).n > before);

  const sleeper = await bg.start(task, ['sleep', '60']);
  decideAsCli({ policy: b.engine.policy, db }, make.id, 'denied');
  b.engine.jobs().sync();
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.match(b.events(job.id).find((e) => e.kind === 'background_unwatched')?.body, { processes: [{ id: sleeper.id, argv: ['sleep', '60'] }], notice: /what it changes from now on is not recorded/ }, 'the end says which process still runs unwatched');
  t.equal((sql(db, 'SELECT count(*) AS n FROM watches WHERE id = ?').get(job.id) as { n: number }).n, 0, "the task's baseline is gone");
  await bg.stop(sleeper.id, task);
});
