/*
 * The README's `run` transcript is true: the same command, in a project laid out as the README
 * describes, against a model that answers as the transcript shows (a real HTTP server speaking
 * the OpenAI wire format, configured with `model add local --provider ollama` as the README does),
 * with stdin a terminal that answers the approval prompt `y` as the transcript shows. What it
 * prints, with the answer echoed where a terminal echoes it, must be the README's lines.
 *
 * readme-examples.test.ts skips this one example for that reason: it needs the model.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import t from 'tap';
import { main } from '../../src/cli/main.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { blocks, examples, README, shadowcodeArgv, shellWords } from '../fixtures/readme.js';

const COMMAND = /^shadowcode --project ~\/src\/app run --level workspace /;

t.test("the README's run transcript is what run prints", async (t) => {
  const shown = blocks(README).flatMap(examples).find((e) => COMMAND.test(e.command));
  t.ok(shown, 'the README shows a run transcript');
  if (!shown) return;
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-readme-run-')));
  const home = join(root, 'home', 'me');
  const app = join(home, 'src', 'app');
  mkdirSync(join(app, 'src'), { recursive: true });
  mkdirSync(join(root, 'tmp'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', scripts: { test: 'node --test' } }));
  writeFileSync(join(app, 'src', 'greet.js'), "export function greet() {\n  return 'hello';\n}\n");
  writeFileSync(join(app, 'greet.test.js'), "import test from 'node:test';\nimport assert from 'node:assert';\nimport { greet } from './src/greet.js';\ntest('greets the world', () => assert.equal(greet(), 'hello, world'));\n");
  const summary = 'greet() now returns "hello, world"; npm test passes.';
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: JSON.stringify({ path: 'src/greet.js' }) }] },
      { tool_calls: [{ id: 'c2', name: 'edit_file', arguments: JSON.stringify({ path: 'src/greet.js', old_text: "'hello'", new_text: "'hello, world'" }) }] },
      { tool_calls: [{ id: 'c3', name: 'run_command', arguments: JSON.stringify({ argv: ['npm', 'test'] }) }] },
      { tool_calls: [{ id: 'c4', name: 'finish', arguments: JSON.stringify({ summary }) }] },
    ],
  });
  t.teardown(() => fake.close());
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: join(home, '.local', 'share'), XDG_CACHE_HOME: join(home, '.cache'), TMPDIR: join(root, 'tmp') };
  const quiet = async (argv: string[]) => {
    const sink = new PassThrough();
    sink.resume();
    const code = await main(argv, { stdin: new PassThrough(), stdout: sink, stderr: sink, env, cwd: home });
    t.equal(code, 0, argv.join(' '));
  };
  // The README's steps 1 and 2, with the model served here instead of by Ollama.
  await quiet(['model', 'add', 'local', '--provider', 'ollama', '--model', 'qwen2.5-coder:14b', '--base-url', `${fake.url}/v1`, '--default']);
  await quiet(['--project', app, 'trust', '--level', 'workspace']);

  // A terminal: what the command writes, and the answer it echoes when the prompt is answered.
  let screen = '';
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  const out = new Writable({
    write(chunk, _enc, done) {
      screen += chunk;
      if (/Approve\? \[y\/N\] $/.test(screen)) {
        screen += 'y\n';
        stdin.write('y\n');
      }
      done();
    },
  });
  const argv = shadowcodeArgv(shellWords(shown.command, home).at(-1)?.argv ?? []);
  t.ok(argv);
  const code = await main(argv ?? [], { stdin, stdout: out, stderr: out, env, cwd: home });
  t.equal(code, 0, screen);
  t.equal(readFileSync(join(app, 'src', 'greet.js'), 'utf8'), "export function greet() {\n  return 'hello, world';\n}\n", 'the edit was made');
  const normalize = (s: string) =>
    s
      .split(root).join('')
      .replace(/\b(job|appr|ckpt)_[0-9a-z]{22}\b/g, '$1_<id>')
      .replace(/\n$/, '')
      .split('\n');
  t.same(normalize(screen), normalize(shown.output.join('\n')), 'the transcript as the README shows it');
});
