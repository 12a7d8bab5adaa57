// shadowcode run: the built CLI against the fake model. --json prints one
// event per line; an approval made from another shell lets the command run;
// Ctrl-C cancels the task and waits until its command's process group is gone.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { startCli } from '../fixtures/cli-run.js';
import { cli, sandbox, until } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { processesWith } from '../fixtures/mcp-client.js';
import { startFakeModel } from '../fixtures/fake-model.js';

t.test('run --json prints one event per line and finishes after an approval from another shell', async (t) => {
  const sb = sandbox('cli-run');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'a.txt'), 'x\n');
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'c1', name: 'edit_file', arguments: JSON.stringify({ path: 'a.txt', old_text: 'x', new_text: 'y' }) }], finish: 'tool_calls', split: 3 },
      { tool_calls: [{ id: 'c2', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'cat a.txt > b.txt'] }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'c3', name: 'finish', arguments: JSON.stringify({ summary: 'a is y' }) }], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = startCli(sb, ['--json', 'run', '--level', 'workspace', 'change x to y and copy it']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => r.out().includes('"approval_requested"'));
  const req = r.out().split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.kind === 'approval_requested');
  t.same(req.body.action, {
    argv: ['sh', '-c', 'cat a.txt > b.txt'], cwd: sb.project, changed_files: ['a.txt'],
    runs_changed: [{ path: 'a.txt', reason: 'the command names a.txt, which this task changed', diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-x\n+y\n' }],
    notice: 'This command runs code this task changed: the command names a.txt, which this task changed. Review those changes before approving.',
  });
  const ok = await cli(sb, ['--project', sb.project, 'approvals', 'approve', req.body.approval_id]);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await r.exit, 0, r.err());
  const lines = r.out().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  t.ok(lines.every((l) => typeof l.kind === 'string' && typeof l.seq === 'number' && l.job_id === req.job_id), 'every line is one event of the task');
  t.match(lines.at(-1), { kind: 'state', body: { state: 'succeeded' } });
  t.match(lines.find((l) => l.kind === 'answer').body, { state: 'succeeded', summary: 'a is y' });
  t.equal(readFileSync(join(sb.project, 'b.txt'), 'utf8'), 'y\n');
});

t.test('Ctrl-C cancels the task and waits for its command to be gone', async (t) => {
  const sb = sandbox('cli-int');
  // Pids inside the sandbox are its own PID namespace's: the host's process table is searched by a marker instead.
  const mark = `run-int-${process.pid}-${Date.now()}`;
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({
    format: 'anthropic',
    script: [{ tool_calls: [{ id: 'c1', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', `sh -c 'sleep 60; : ${mark}-child' & echo started > started; wait`] }) }], finish: 'tool_use' }],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'anthropic', fake.url);
  const r = startCli(sb, ['run', '--level', 'workspace', 'sleep a while']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /approvals approve (appr_\w+)/.test(r.err()));
  const id = /approvals approve (appr_\w+)/.exec(r.err())![1]!;
  t.ok(r.err().includes(`The task asks to run ${JSON.stringify(['sh', '-c', `sh -c 'sleep 60; : ${mark}-child' & echo started > started; wait`])} in `), 'the exact action is shown');
  await cli(sb, ['--project', sb.project, 'approvals', 'approve', id]);
  await until(() => existsSync(join(sb.project, 'started')) && processesWith(`${mark}-child`).length >= 1);
  r.child.kill('SIGINT');
  t.equal(await r.exit, 130, 'cancelled');
  t.same(processesWith(mark), [], 'the command and its child were gone before the CLI exited');
  t.match(r.out(), /SC_CANCELLED|cancelled/);
  t.notMatch(r.out(), /cancelled: {2}\[\]/, 'never an empty reason');
  t.match(r.out(), /^cancelled(: .+ \[SC_CANCELLED\])?\n\(cancelled, task job_\w+; changed started\n/m, 'what the cancelled command wrote is a change of the task');
});

t.test('run shows an external call exactly, and the call runs once approved from another shell', async (t) => {
  const { grant, peerDef, world } = await import('../fixtures/mcp-client.js');
  const w = await world();
  const g = await grant(w, 'peer', peerDef('ok'));
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'm1', name: 'mcp__peer__echo', arguments: JSON.stringify({ text: 'hi there' }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'm2', name: 'finish', arguments: JSON.stringify({ summary: 'echoed' }) }], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(w.sb, 'openai', fake.url);
  const r = startCli(w.sb, ['run', '--level', 'workspace', 'echo through the peer']);
  t.teardown(() => r.child.kill('SIGKILL'));
  const shown = `The task asks to call ${g.id} tool echo with {"text":"hi there"}`;
  await until(() => (r.out() + r.err()).includes(shown));
  const id = /approvals approve (appr_\S+)/.exec(r.out() + r.err())?.[1];
  t.ok(id, 'the line names the approval to give');
  const ok = await cli(w.sb, ['--project', w.sb.project, 'approvals', 'approve', id as string]);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await r.exit, 0, r.err());
  t.match(r.out(), /echoed/);
  t.match(JSON.stringify(fake.requests[1]?.body), /echo: hi there/, "the server's answer reached the model");
});

t.test("run shows a failed server call's stderr and hint on the terminal (mcp.stderr), not only in the job's events", async (t) => {
  const { grant, peerDef, world } = await import('../fixtures/mcp-client.js');
  const w = await world();
  const g = await grant(w, 'peer', peerDef('ok'));
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'm1', name: 'mcp__peer__echo', arguments: JSON.stringify({ text: 'crash' }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'm2', name: 'finish', arguments: JSON.stringify({ summary: 'gave up' }) }], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(w.sb, 'openai', fake.url);
  const r = startCli(w.sb, ['run', '--level', 'workspace', 'crash the peer']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /approvals approve (appr_\S+)/.test(r.out() + r.err()));
  const id = /approvals approve (appr_\S+)/.exec(r.out() + r.err())?.[1];
  t.equal((await cli(w.sb, ['--project', w.sb.project, 'approvals', 'approve', id as string])).code, 0);
  await r.exit;
  t.match(r.err(), `server ${g.id} failed (SC_MCP_CALL_FAILED); its stderr, last lines (secrets scrubbed):\n  fatal: cannot open /data/store.json: ENOENT\nhint: it ran in the sandbox`);
});

t.test('the terminal shows a manifest change whole before it is written, and warns that npm test runs the changed script', async (t) => {
  const sb = sandbox('cli-protect');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'package.json'), `${JSON.stringify({ name: 'app', scripts: { test: 'node t.js' } }, null, 2)}\n`);
  const evil = `${JSON.stringify({ name: 'app', scripts: { test: 'cat ~/.ssh/id_rsa' } }, null, 2)}\n`;
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'c1', name: 'write_file', arguments: JSON.stringify({ path: 'package.json', content: evil }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'c2', name: 'run_command', arguments: JSON.stringify({ argv: ['npm', 'test'] }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'c3', name: 'finish', arguments: JSON.stringify({ summary: 'done' }) }], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = startCli(sb, ['run', '--level', 'workspace', 'fix the tests']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /approvals approve (appr_\w+)/.test(r.err()), 30000);
  const first = /approvals approve (appr_\w+)/.exec(r.err())![1]!;
  t.match(r.err(), /The task asks to write package\.json \(protected by rule package-manifests: its own approval\)\n  why this needs its own approval: .*\n  the complete change:\n    --- a\/package\.json\n    \+\+\+ b\/package\.json\n    @@ -1,6 \+1,6 @@\n.*\n    -    "test": "node t\.js"\n    \+    "test": "cat ~\/\.ssh\/id_rsa"\n/s);
  const listed = await cli(sb, ['--project', sb.project, 'approvals']);
  t.match(listed.stdout, new RegExp(`${first}:\\n  why this needs its own approval: .*\\n  the complete change:\\n    --- a/package.json`), 'shadowcode approvals shows the diff too');
  await cli(sb, ['--project', sb.project, 'approvals', 'approve', first]);
  await until(() => (r.err().match(/approvals approve (appr_\w+)/g) ?? []).length === 2, 30000);
  const second = [...r.err().matchAll(/approvals approve (appr_\w+)/g)][1]![1]!;
  t.match(r.err(), /The task asks to run \["npm","test"\] in .*\n  files this task changed so far: package\.json\n  WARNING: This command runs code this task changed: npm runs scripts from package\.json, which this task changed \(its changed script "test"\)/);
  const again = await cli(sb, ['--json', '--project', sb.project, 'approvals']);
  const pendingNow = JSON.parse(again.stdout).approvals;
  t.same(fields(pendingNow, ['id', 'kind']), [{ id: second, kind: 'command' }], 'the one pending approval');
  t.same([pendingNow[0].action.argv, pendingNow[0].action.changed_files, fields(pendingNow[0].action.runs_changed, ['path'])], [['npm', 'test'], ['package.json'], [{ path: 'package.json' }]], 'its exact argv, changed files and the file it runs');
  await cli(sb, ['--project', sb.project, 'approvals', 'deny', second]);
  t.equal(await r.exit, 0, r.err());
});
