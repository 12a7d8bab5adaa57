// What a person sees: aligned tables with headers, colour only at a terminal, NO_COLOR respected.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import t from 'tap';
import { main } from '../../src/cli/main.js';
import { style, table } from '../../src/cli/style.js';
import { cli, type Sandbox, sandbox, spawnCli } from '../fixtures/env.js';

/** Runs the CLI with stdout and stderr that say they are a terminal. */
async function atTerminal(sb: Sandbox, argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out = Object.assign(new PassThrough(), { isTTY: true });
  const err = Object.assign(new PassThrough(), { isTTY: true });
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += d));
  err.on('data', (d) => (stderr += d));
  const code = await main(argv, { stdin: Readable.from([]), stdout: out, stderr: err, env: { ...sb.env, ...env }, cwd: sb.root });
  return { code, stdout, stderr };
}
const ESC = '\u001b[';

async function catalog(): Promise<{ sb: Sandbox; hash: string }> {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const f = join(sb.root, 'd.yaml');
  writeFileSync(f, 'name: my-tools\ncommand: ["/opt/tools/bin/server", "--stdio"]\nenv_refs:\n  API_TOKEN: MY_TOOLS_API_KEY\n');
  const hash = JSON.parse((await cli(sb, ['--json', 'mcp', 'add', f])).stdout).hash as string;
  return { sb, hash };
}

t.test('the mcp view is a table with a header, aligned columns and the full current hash', async (t) => {
  const { sb, hash } = await catalog();
  await cli(sb, ['--project', sb.project, 'mcp', 'enable', 'config:my-tools', '--hash', hash]);
  const r = await cli(sb, ['--project', sb.project, 'mcp']);
  const lines = r.stdout.split('\n');
  t.match(lines[1], /^STATE {4}ID {15}TRANSPORT {2}TARGET/);
  t.match(lines[2], new RegExp(`^enabled  config:my-tools  stdio      /opt/tools/bin/server \\(\\+1 args\\)  env:API_TOKEN ref:MY_TOOLS_API_KEY  ${hash}$`));
  t.equal(lines[1]!.indexOf('HASH'), lines[2]!.indexOf(hash), 'the hash column is aligned under its header');
  t.notMatch(r.stdout, ESC, 'no colour when stdout is not a terminal');
});

t.test('secret list and approvals are tables with headers', async (t) => {
  const sb = sandbox();
  await cli(sb, ['secret', 'set', 'A_LONGER_NAME'], 'v1');
  await cli(sb, ['secret', 'set', 'B'], 'v2');
  const lines = (await cli(sb, ['secret', 'list'])).stdout.trimEnd().split('\n');
  t.match(lines[0], /^NAME {11}CREATED {19}UPDATED$/);
  t.match(lines[1], /^A_LONGER_NAME  \d{4}-\d\d-\d\dT\S+Z  \d{4}-/);
  t.match(lines[2], /^B {14}\d{4}-/);
  t.equal((await cli(sb, ['--project', sb.project, 'approvals'])).stdout, 'no pending approvals\n');
});

t.test('colour for states and errors at a terminal only, and never with NO_COLOR', async (t) => {
  const { sb, hash } = await catalog();
  await cli(sb, ['--project', sb.project, 'mcp', 'enable', 'config:my-tools', '--hash', hash]);
  const tty = await atTerminal(sb, ['--project', sb.project, 'mcp']);
  t.match(tty.stdout, `${ESC}32menabled${ESC}39m`, 'enabled is green at a terminal');
  const plain = await atTerminal(sb, ['--project', sb.project, 'mcp'], { NO_COLOR: '1' });
  t.notMatch(plain.stdout, ESC, 'NO_COLOR turns colour off');
  t.equal(plain.stdout, (await cli(sb, ['--project', sb.project, 'mcp'])).stdout, 'and the text is the same as in a pipe');
  const json = await atTerminal(sb, ['--json', '--project', sb.project, 'mcp']);
  t.notMatch(json.stdout, ESC, '--json is never coloured');
  const err = await atTerminal(sb, ['stauts']);
  t.match(err.stderr, `${ESC}31mshadowcode:${ESC}39m unknown command`, 'errors are red at a terminal');
  t.notMatch((await atTerminal(sb, ['stauts'], { NO_COLOR: 'yes' })).stderr, ESC);
  t.notMatch((await cli(sb, ['stauts'])).stderr, ESC, 'not at a terminal: no colour');
});

t.test('mcp serve started at a terminal says on stderr that it waits for a client', async (t) => {
  const sb = sandbox();
  const out = new PassThrough();
  let stderr = '';
  const err = new PassThrough();
  err.on('data', (d) => (stderr += d));
  const stdin = Object.assign(Readable.from([]), { isTTY: true });
  const code = await main(['--project', sb.project, 'mcp', 'serve'], { stdin, stdout: out, stderr: err, env: sb.env, cwd: sb.root });
  t.equal(code, 0, 'end of input ends it');
  t.match(stderr, /waiting for an MCP client on stdin/);
  const piped = await spawnCli(sb, ['--project', sb.project, 'mcp', 'serve'], '');
  t.notMatch(piped.stderr, /waiting for an MCP client/, 'a client on a pipe is not told');
});

t.test('a table shows the control characters of a model, server or file text escaped, and keeps its own colour', async (t) => {
  const hostile = 'ok\u001b]0;owned\u0007\r\u001b[2Jdone\u001b[31m!\u009b';
  const out = table(['NAME', 'DESCRIPTION'], [['tool', hostile], [style(true).bad('failed'), 'x']], style(true));
  t.notMatch(out, /\u0007|\r|\u009b|\u001b\]|\u001b\[2J/, 'no bell, carriage return, OSC or cursor sequence reaches the terminal');
  t.match(out, 'ok\\x1b]0;owned\\x07\\r\\x1b[2Jdone', 'the text is still readable, escaped');
  t.match(out, `${ESC}31mfailed${ESC}39m`, 'our own colour codes pass');
  const lines = out.split('\n');
  t.equal(lines.length, 3, 'a carriage return or newline inside a cell cannot forge a row');
});
