// shadowcode run at a terminal (a real pseudo-terminal, made by util-linux
// `script`): every y/N prompt reads its own answer, and what the closing lines
// say; and run without a terminal: the read_only notice and the refused count.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { startCliInTerminal } from '../fixtures/cli-run.js';
import { cli, ROOT, sandbox, spawnCli, until } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';

t.test('at a terminal, each of two y/N prompts reads its own answer, and the last line points to review and rollback', async (t) => {
  const sb = sandbox('run-tty');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'a.txt'), 'x\n');
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'c1', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'echo one > one.txt'] }) }] },
      { tool_calls: [{ id: 'c2', name: 'run_command', arguments: JSON.stringify({ argv: ['sh', '-c', 'echo two > two.txt'] }) }] },
      { tool_calls: [{ id: 'c3', name: 'edit_file', arguments: JSON.stringify({ path: 'a.txt', old_text: 'x', new_text: 'y' }) }] },
      { tool_calls: [{ id: 'c4', name: 'finish', arguments: JSON.stringify({ summary: 'ran both' }) }] },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = startCliInTerminal(sb, ['run', '--level', 'workspace', 'run two commands']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /one\.txt"\] in .*Approve\? \[y\/N\]/s.test(r.screen()), 20000);
  r.type('y\r');
  await until(() => /two\.txt"\] in .*Approve\? \[y\/N\]/s.test(r.screen()), 20000);
  r.type('n\r');
  t.equal(await r.exit, 0, r.screen());
  t.equal(readFileSync(join(sb.project, 'one.txt'), 'utf8'), 'one\n', 'the first answer, y, ran the first command');
  t.notOk(existsSync(join(sb.project, 'two.txt')), 'the second answer, n, was read and refused the second');
  const screen = r.screen();
  t.match(screen, /ran both\n\(succeeded, task (job_\w+); 1 action was refused; changed one\.txt, a\.txt\n {2}the diff: shadowcode --project \S+ review \1\n {2}undo it: {2}shadowcode --project \S+ rollback \1/);
  t.notMatch(screen, /shadow_review|shadow_rollback/);
  t.match(screen, /step 4 · finish · 72 tokens · /, 'the status line counts steps and tokens (4 answers of 11 + 7)');
  t.notMatch(screen, /redacted/);
});

t.test('without a terminal, a build task at read_only says it cannot change anything, and counts what was refused', async (t) => {
  const sb = sandbox('run-ro');
  await cli(sb, ['--project', sb.project, 'trust']);
  const fake = await startFakeModel({
    format: 'anthropic',
    script: [
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: JSON.stringify({ path: 'x.txt', content: 'x' }) }, { id: 'w2', name: 'write_file', arguments: JSON.stringify({ path: 'y.txt', content: 'y' }) }] },
      { tool_calls: [{ id: 'f', name: 'finish', arguments: JSON.stringify({ summary: 'nothing written' }) }] },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'anthropic', fake.url);
  const r = await spawnCli(sb, ['--project', sb.project, 'run', 'write two files']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /started; Ctrl-C cancels it\nnote: at level read_only this task cannot change anything/);
  t.match(r.stdout, /nothing written\n\(succeeded, task job_\w+; 2 actions were refused at ceiling read_only\)/);
  t.notOk(existsSync(join(sb.project, 'x.txt')));
});

t.test("at a terminal, a coding CLI's file change is asked with its diff, and its steps are counted", async (t) => {
  const sb = sandbox('run-tty-cc');
  await cli(sb, ['--project', sb.project, 'trust']);
  mkdirSync(join(sb.project, 'src'));
  writeFileSync(join(sb.project, 'src', 'app.txt'), 'hello\n');
  const added = await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', join(ROOT, 'test', 'fixtures', 'fake-claude.mjs'), '--default']);
  t.equal(added.code, 0, added.stderr);
  const r = startCliInTerminal(sb, ['run', '--level', 'workspace', 'say goodbye']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /Approve\? \[y\/N\]/.test(r.screen()), 20000);
  t.match(r.screen(), /The task asks to write src\/app\.txt\.\n--- a\/src\/app\.txt\n\+\+\+ b\/src\/app\.txt\n@@.*\n-hello\n\+goodbye\n+Approve\? \[y\/N\]/, 'the prompt shows the change');
  r.type('y\r');
  t.equal(await r.exit, 0, r.screen());
  t.equal(readFileSync(join(sb.project, 'src', 'app.txt'), 'utf8'), 'goodbye\n');
  t.match(r.screen(), /step [1-9]\d* · /, 'the status line counts the runner\'s steps');
  t.notMatch(r.screen(), /step 0 · Edit/);
});
