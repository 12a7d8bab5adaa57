// shadow_run end to end: the official SDK clients (v2 and v1), each over stdio
// and over HTTP, start a build task against the fake model server in both wire formats;
// the task reads a file, edits it and asks to run a command, the client
// approves it with shadow_approve, the command runs for real, the task
// finishes, and shadow_review, shadow_why and shadow_rollback work on it.
//
// Four runs, not all eight combinations: the model's wire format is the engine's
// business and the client's SDK and transport the server's, so the runs cover every
// pair instead (each format over stdio and over HTTP, and with each SDK; each SDK over
// each transport), as run-mcp.test.ts does. Each run is a gateway, a task and a
// command, about a CPU-second.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call, type Format, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { cli, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { startFakeModel, type Step } from '../fixtures/fake-model.js';
import { httpClient, startGateway } from '../fixtures/http.js';
import { connect } from '../fixtures/mcp.js';

const build = (split: number): Step[] => [
  { text: 'Reading it first.', tool_calls: [{ id: 'c1', name: 'read_file', arguments: JSON.stringify({ path: 'greet.txt' }) }], finish: 'tool_calls', split },
  { tool_calls: [{ id: 'c2', name: 'edit_file', arguments: JSON.stringify({ path: 'greet.txt', old_text: 'hello', new_text: 'hello, world' }) }], finish: 'tool_calls', split },
  { tool_calls: [{ id: 'c3', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'cat greet.txt > seen.txt; echo verified'] }) }], finish: 'tool_calls', split },
  { tool_calls: [{ id: 'c4', name: 'finish', arguments: JSON.stringify({ summary: 'greet.txt now says hello, world; checked with cat' }) }], finish: 'tool_calls', split },
];

type Via = 'stdio-v2' | 'stdio-v1' | 'http-v2' | 'http-v1';

async function open(t: any, sb: ReturnType<typeof sandbox>, via: Via) {
  const flags = ['--allow-write', '--allow-approvals'];
  if (via === 'http-v2' || via === 'http-v1') {
    const gw = await startGateway(sb, flags);
    t.teardown(() => gw.stop());
    const c = await httpClient(gw.url, via === 'http-v1' ? 'v1' : 'v2-modern');
    t.teardown(() => c.close());
    return c;
  }
  const c = await connect(sb, via === 'stdio-v2' ? 'v2-modern' : 'v1', flags);
  t.teardown(() => c.close());
  return c;
}

const RUNS: Array<[Format, Via]> = [
  ['openai', 'stdio-v2'],
  ['anthropic', 'stdio-v1'],
  ['anthropic', 'http-v2'],
  ['openai', 'http-v1'],
];

for (const [format, via] of RUNS) {
  t.test(`${format} model over ${via}: read, edit, approved command, finish, review, why, rollback`, async (t) => {
    const sb = sandbox('run');
    await cli(sb, ['--project', sb.project, 'trust']);
    writeFileSync(join(sb.project, 'greet.txt'), 'hello\n');
    const fake = await startFakeModel({ format, script: build(5) });
    t.teardown(() => fake.close());
    useFakeModel(sb, format, fake.url);
    const c = await open(t, sb, via);

    const started = await call(c, 'shadow_run', { prompt: 'make the greeting greet the world, then check it', mode: 'build', permission_level: 'workspace' });
    t.match(started, { job_id: /^job_/, mode: 'build', ceiling: 'workspace', model: 'fake' });
    const stop = await nextStop(c, started.job_id);
    t.equal(stop.job.state, 'waiting_approval');
    const [approval] = stop.approvals;
    t.same(
      approval.action,
      {
        argv: ['sh', '-c', 'cat greet.txt > seen.txt; echo verified'], cwd: sb.project, changed_files: ['greet.txt'],
        runs_changed: [{ path: 'greet.txt', reason: 'the command names greet.txt, which this task changed', diff: '--- a/greet.txt\n+++ b/greet.txt\n@@ -1,1 +1,1 @@\n-hello\n+hello, world\n' }],
        notice: 'This command runs code this task changed: the command names greet.txt, which this task changed. Review those changes before approving.',
      },
      'shadow_jobs shows the exact argv and directory, the files the task changed, and that the command reads one, with its diff',
    );
    t.notOk(existsSync(join(sb.project, 'seen.txt')), 'nothing ran before the approval');
    await call(c, 'shadow_approve', { approval_id: approval.id, decision: 'approve' });
    const end = await nextStop(c, started.job_id);
    t.match(end.answer, { state: 'succeeded', summary: 'greet.txt now says hello, world; checked with cat' });
    t.equal(readFileSync(join(sb.project, 'seen.txt'), 'utf8'), 'hello, world\n', 'the approved command ran for real, after the edit');
    t.equal(fake.requests.length, 4, 'one model request per step');
    const kinds = new Set((await call(c, 'shadow_jobs', { action: 'events', job_id: started.job_id, limit: 100 })).events.map((e: any) => e.kind));
    for (const k of ['model_request', 'tool_call', 'tool_result', 'approval_requested', 'approval_approved', 'checkpoint', 'stdout', 'answer']) t.ok(kinds.has(k), `${k} is an event`);

    const review = await call(c, 'shadow_review', { task_id: started.job_id });
    t.matchOnly(fields(review.files, ['path', 'status', 'diff']), [{ path: 'greet.txt', status: 'modified', diff: /-hello\n\+hello, world/ }, { path: 'seen.txt', status: 'added', diff: /\+hello, world/ }], 'the file the approved command made is a change of the task too');
    const why = await call(c, 'shadow_why', { path: 'greet.txt' });
    t.match(JSON.stringify(why), started.job_id, 'the history names the task');
    t.match((await call(c, 'shadow_why', { path: 'seen.txt' })).changes, [{ task_id: started.job_id, why: /approved command \["sh","-c","cat greet.txt > seen.txt; echo verified"\]/ }]);
    const rolled = await call(c, 'shadow_rollback', { task_id: started.job_id, confirm: true });
    t.same(rolled.restored, ['greet.txt', 'seen.txt']);
    t.equal(readFileSync(join(sb.project, 'greet.txt'), 'utf8'), 'hello\n');
    t.notOk(existsSync(join(sb.project, 'seen.txt')), "the command's file is rolled back with the rest");
  });
}
