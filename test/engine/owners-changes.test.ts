// A killed owner keeps the record: Claude Code (the stand-in, test/fixtures/fake-claude.mjs)
// edits a file in a task of an `mcp serve`, and that server is SIGKILLed while the CLI works
// on, before anything else has looked at the project. Another server of the project, already running, is asked for the
// review: the edit is there (recorded from the task's durable baseline by whoever settles the
// dead owner's task), rollback restores it, and the CLI's run folder with its MCP config is gone.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { pidRunning } from '../../src/engine/owners.js';
import { call, nextStop } from '../fixtures/agent-e2e.js';
import { cli, sandbox, until } from '../fixtures/env.js';
import { connect } from '../fixtures/mcp.js';
import { FIXTURES } from '../fixtures/runner-task.js';

const FLAGS = ['--allow-write', '--allow-approvals'];

t.test("a SIGKILLed mcp serve: the coding CLI's edit is reviewed and rolled back from another server, and its run folder is removed", async (t) => {
  const sb = sandbox('kill-owner');
  await cli(sb, ['--project', sb.project, 'trust']);
  mkdirSync(join(sb.project, 'src'));
  writeFileSync(join(sb.project, 'src', 'app.txt'), 'hello world\n');
  mkdirSync(join(sb.root, '.claude'));
  const record = join(sb.root, '.claude', 'claude-record.json');
  const added = await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', join(FIXTURES, 'fake-claude.mjs'), ...['--fake-scenario', 'edit-wait', '--fake-record', record].flatMap((a) => ['--arg', a])]);
  t.equal(added.code, 0, added.stderr);
  const tmp = sb.env.TMPDIR as string;

  const owner = await connect(sb, 'v2-modern', FLAGS);
  t.teardown(() => owner.close().catch(() => {}));
  // A second server of the project, opened before the kill: it must learn of the death by itself.
  const other = await connect(sb, 'v2-modern', FLAGS);
  t.teardown(() => other.close());
  t.ok((await call(other, 'shadow_status')).connection, 'its store is open (its own settling on open is behind it)');
  const ownerPid = Number((await call(owner, 'shadow_status')).connection.owner.split(':')[1]);

  const started = await call(owner, 'shadow_run', { prompt: 'change hello to goodbye', mode: 'build', permission_level: 'workspace' });
  const edit = await nextStop(owner, started.job_id, 30000);
  t.equal(edit.approvals[0].kind, 'write');
  await call(owner, 'shadow_approve', { approval_id: edit.approvals[0].id, decision: 'approve' });
  const edited = () => {
    try {
      return JSON.parse(readFileSync(record, 'utf8')).edited === true;
    } catch {
      return false; // not written yet, or being written
    }
  };
  await until(edited, 20000);
  t.equal((await call(owner, 'shadow_jobs', { action: 'events', job_id: started.job_id, limit: 1 })).job.state, 'running', 'the task runs on');
  t.equal(readFileSync(join(sb.project, 'src', 'app.txt'), 'utf8'), 'goodbye world\n', 'the edit is on disk');
  const runDirs = () => readdirSync(tmp).filter((n) => n.startsWith(`shadowcode-run-${ownerPid}-`));
  t.equal(runDirs().length, 1, 'the run folder exists while the CLI runs');

  process.kill(ownerPid, 'SIGKILL');
  await until(() => !pidRunning(ownerPid), 10000);

  const review = await call(other, 'shadow_review', { task_id: started.job_id });
  t.match(review.files, [{ path: 'src/app.txt', status: 'modified', diff: /-hello world\n\+goodbye world/ }], "the other server's review shows the CLI's edit");
  t.same(runDirs(), [], "the run folder with the CLI's MCP config is removed by whoever settled the task");
  const job = (await call(other, 'shadow_jobs', { action: 'list' })).jobs;
  t.same(job, [], "the task is not the other server's own");
  const why = await cli(sb, ['--project', sb.project, '--json', 'why', 'src/app.txt']);
  t.match(JSON.parse(why.stdout).changes, [{ task_id: started.job_id, why: `changed while the task ran, before what ran it (pid ${ownerPid}) died and could record it` }], 'recorded from the baseline by the settler');
  const rolled = await call(other, 'shadow_rollback', { task_id: started.job_id, confirm: true });
  t.same(rolled.restored, ['src/app.txt']);
  t.equal(readFileSync(join(sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n', 'rolled back');
});
