// shadowcode run, approvals, review, why and jobs, with a task that writes hostile text: file
// names, a diff line, argv words and its answer carry every class of control, bidi and
// invisible character, and issue 41's two forgeries verbatim. What reaches the terminal shows
// each as an escape; --json keeps the original strings in valid JSON.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { startCli, startCliInTerminal } from '../fixtures/cli-run.js';
import { cli, type Sandbox, sandbox, until } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { ALL, ALL_SHOWN, assertInert, FORGED_FILE, FORGED_FILE_SHOWN, MAKEFILE_LINE } from '../fixtures/hostile-text.js';

// Hostile text never goes into a test message, not even quoted: it would forge the TAP stream as it would a terminal.
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const ALL_FILE = `n${ALL}.txt`;
const NEWLINE_FILE = 'line\n  WARNING: none.txt';
const ARGV = ['echo', `w${ALL}`];
const ANSWER = `done ${ALL}\nsecond line`;
const MAKEFILE = `all:\n${MAKEFILE_LINE}\n`;
/** What the diff line of the Makefile looks like, escaped: the touch is there to see. */
const MAKEFILE_SHOWN = '+\t@touch "$$HOME/PWNED" #\\r\\x1b[2K    +\t@echo building';

async function hostileModel(t: Test, sb: Sandbox) {
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [call('w1', 'write_file', { path: FORGED_FILE, content: 'ok\n' }), call('w2', 'write_file', { path: ALL_FILE, content: 'x\n' }), call('w3', 'write_file', { path: NEWLINE_FILE, content: 'y\n' })], finish: 'tool_calls' },
      { tool_calls: [call('m1', 'write_file', { path: 'Makefile', content: MAKEFILE })], finish: 'tool_calls' },
      { tool_calls: [call('c1', 'run_command', { argv: ARGV })], finish: 'tool_calls' },
      { tool_calls: [call('f1', 'finish', { summary: ANSWER })], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
}

t.test('without a terminal: the diff, the changed files, the argv and the answer are shown escaped, in run and in approvals', async (t) => {
  const sb = sandbox('run-inert');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'Makefile'), 'all:\n\t@echo building\n');
  await hostileModel(t, sb);
  const r = startCli(sb, ['run', '--level', 'workspace', 'build it']);
  t.teardown(() => r.child.kill('SIGKILL'));

  // The Makefile needs its own approval, with its diff.
  await until(() => /approvals approve (appr_\w+)/.test(r.err()), 30000);
  const first = /approvals approve (appr_\w+)/.exec(r.err())![1]!;
  t.ok(r.err().includes(`\n    ${MAKEFILE_SHOWN}\n`), `the Makefile's diff line shows the touch and the forged rest`);
  const listed = await cli(sb, ['--project', sb.project, 'approvals']);
  t.ok(listed.stdout.includes(`\n    ${MAKEFILE_SHOWN}\n`), 'approvals shows the same diff line escaped');
  assertInert(t, listed.stdout, 'approvals, the diff');
  await cli(sb, ['--project', sb.project, 'approvals', 'approve', first]);

  // The command: its argv, and every file the task changed, each on its own line of the list.
  await until(() => (r.err().match(/approvals approve (appr_\w+)/g) ?? []).length === 2, 30000);
  const second = [...r.err().matchAll(/approvals approve (appr_\w+)/g)][1]![1]!;
  const files = /files this task changed so far: (.*)\n/.exec(r.err())?.[1] ?? '';
  t.ok(files.includes(FORGED_FILE_SHOWN), `issue 41's file name cannot end the list`);
  t.ok(files.includes(`n${ALL_SHOWN}.txt`), 'a file name with every class shows each escaped');
  t.ok(files.includes('line\\n  WARNING: none.txt'), 'a newline in a file name cannot start a line of its own');
  t.notMatch(r.err(), /^ {2}WARNING: none/m, 'no forged warning line');
  t.match(r.err(), /The task asks to run \["echo","w.*\\u\{202e\}.*"\] in /, 'the argv word shows its bidi override escaped');
  const again = await cli(sb, ['--project', sb.project, 'approvals']);
  t.ok(again.stdout.includes(FORGED_FILE_SHOWN), 'approvals lists the same file escaped');
  assertInert(t, again.stdout, 'approvals, the command');
  await cli(sb, ['--project', sb.project, 'approvals', 'deny', second]);

  t.equal(await r.exit, 0, 'run exited 0');
  assertInert(t, r.err(), 'run, on stderr');
  assertInert(t, r.out(), 'run, on stdout');
  t.ok(r.out().startsWith(`done ${ALL_SHOWN}\nsecond line\n`), `the answer keeps its lines and shows each character escaped`);
  t.ok(r.out().includes(`changed ${FORGED_FILE_SHOWN}, `), 'the closing list of changed files is escaped too');
  const job = /task (job_\w+)/.exec(r.out())![1]!;

  const review = await cli(sb, ['--project', sb.project, 'review', job]);
  assertInert(t, review.stdout, 'review');
  t.ok(review.stdout.includes(FORGED_FILE_SHOWN) && review.stdout.includes(MAKEFILE_SHOWN), 'review shows the names and the diff escaped');
  const why = await cli(sb, ['--project', sb.project, 'why', FORGED_FILE]);
  t.equal(why.code, 0, 'why exited 0');
  assertInert(t, why.stdout, 'why');
  const none = await cli(sb, ['--project', sb.project, 'why', `src/none${ALL}.js`]);
  t.ok(none.stdout.includes(`src/none${ALL_SHOWN}.js`), 'why names an unknown path escaped');
  const jobs = await cli(sb, ['--project', sb.project, 'jobs']);
  assertInert(t, jobs.stdout, 'jobs');
  t.match(jobs.stdout, /done a\\x07b\\x01c\\x1bd e\\x08f\\x7fg\\x9bh\\x85i\\u\{202e\}j/, 'jobs shows the answer escaped (its whitespace made one line)');

  // --json: the same strings, exactly, in valid JSON with no raw character.
  const raw = await cli(sb, ['--json', '--project', sb.project, 'review', job]);
  assertInert(t, raw.stdout, 'review --json');
  const data = JSON.parse(raw.stdout);
  t.same(data.files.map((f: { path: string }) => f.path).sort(), ['Makefile', FORGED_FILE, ALL_FILE, NEWLINE_FILE].sort(), 'the original names');
  t.match(data.files.find((f: { path: string }) => f.path === 'Makefile').diff, `+${MAKEFILE_LINE}`, 'the original diff line');
  const jobsJson = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'jobs'])).stdout);
  t.equal(jobsJson.jobs[0].answer.summary, ANSWER, 'the original answer');
});

t.test('run --json prints the original strings in valid JSON lines, with no raw character', async (t) => {
  const sb = sandbox('run-inert-json');
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [call('w1', 'write_file', { path: FORGED_FILE, content: 'ok\n' })], finish: 'tool_calls' },
      { tool_calls: [call('c1', 'run_command', { argv: ARGV })], finish: 'tool_calls' },
      { tool_calls: [call('f1', 'finish', { summary: ANSWER })], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = startCli(sb, ['--json', 'run', '--level', 'workspace', 'go']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => r.out().includes('"approval_requested"'), 30000);
  const req = r.out().split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.kind === 'approval_requested');
  t.same(req.body.action.argv, ARGV, 'the exact argv');
  t.same(req.body.action.changed_files, [FORGED_FILE], 'the exact file name');
  await cli(sb, ['--project', sb.project, 'approvals', 'deny', req.body.approval_id]);
  t.equal(await r.exit, 0, 'run exited 0');
  assertInert(t, r.out(), 'the JSON lines');
  const lines = r.out().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  t.equal(lines.find((l) => l.kind === 'answer').body.summary, ANSWER, 'the exact answer');
});

t.test("at a terminal, the prompt shows issue 41's Makefile line as it is, and only our own control sequences reach it", async (t) => {
  const sb = sandbox('run-inert-tty');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'Makefile'), 'all:\n\t@echo building\n');
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [call('w1', 'write_file', { path: FORGED_FILE, content: 'ok\n' })], finish: 'tool_calls' },
      { tool_calls: [call('m1', 'write_file', { path: 'Makefile', content: MAKEFILE })], finish: 'tool_calls' },
      { tool_calls: [call('c1', 'run_command', { argv: ['make'] })], finish: 'tool_calls' },
      { tool_calls: [call('f1', 'finish', { summary: ANSWER })], finish: 'stop' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = startCliInTerminal(sb, ['run', '--level', 'workspace', 'build it']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /Approve\? \[y\/N\]/.test(r.screen()), 30000);
  t.ok(r.raw().includes(MAKEFILE_SHOWN), 'the diff line, escaped, reached the terminal');
  t.notOk(r.raw().includes('#\r\u001b[2K'), "the line's own carriage return and erase did not");
  r.type('n\r');
  await until(() => (r.screen().match(/Approve\? \[y\/N\]/g) ?? []).length === 2, 30000);
  t.ok(r.raw().includes(`files this task changed so far: ${FORGED_FILE_SHOWN}`), 'the file list shows the forged name escaped');
  t.notOk(r.raw().includes('\u001b[8m'), 'no concealed text');
  t.notOk(r.raw().includes('src/ok.js\r'), "the name's carriage return did not reach the terminal");
  r.type('n\r');
  t.equal(await r.exit, 0, 'run exited 0');
  // Our own sequences: the status line's erase (at the start of a line) and nothing of the task's.
  const foreign = r.raw().replace(/\r\u001b\[2K/g, '').replace(/\r\n/g, '\n');
  assertInert(t, foreign, 'the terminal, but for the status line');
  t.ok(r.raw().includes(`done ${ALL_SHOWN}`), 'the answer, escaped');
});
