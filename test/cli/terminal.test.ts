// What reaches a person's terminal: error lines, an approved command's own output, the mcp
// listings (a definition's file name, a server's tool names and descriptions), status and
// policy explain show hostile text as escapes; our own colour still works at a terminal;
// --json keeps the original strings; mcp serve's protocol is left byte for byte.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import t from 'tap';
import { main } from '../../src/cli/main.js';
import { cli, type Sandbox, sandbox, spawnCli } from '../fixtures/env.js';
import { ALL, ALL_SHOWN, assertInert, FORGED_FILE, FORGED_FILE_SHOWN, LONE_SURROGATE } from '../fixtures/hostile-text.js';
import { INIT } from '../fixtures/mcp.js';
import { PEER } from '../fixtures/mcp-client.js';

// Hostile text never goes into a test message: it would forge the TAP stream as it would a terminal.

/** The CLI with stdout and stderr that say they are a terminal. */
async function atTerminal(sb: Sandbox, argv: string[]) {
  const out = Object.assign(new PassThrough(), { isTTY: true });
  const err = Object.assign(new PassThrough(), { isTTY: true });
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += d));
  err.on('data', (d) => (stderr += d));
  const code = await main(argv, { stdin: Readable.from([]), stdout: out, stderr: err, env: { ...sb.env, TERM: 'xterm' }, cwd: sb.root });
  return { code, stdout, stderr };
}

t.test('an error line shows a hostile path escaped, on its one line', async (t) => {
  const sb = sandbox('inert-err');
  const dir = join(sb.root, `missing${ALL}\nshadowcode: all is well ${FORGED_FILE}`);
  const r = await cli(sb, ['--project', dir, 'status']);
  t.equal(r.code, 2, 'a usage error');
  assertInert(t, r.stderr, 'the error line');
  t.equal(r.stderr.split('\n').length, 2, 'one line');
  t.ok(r.stderr.includes(`missing${ALL_SHOWN}\\nshadowcode: all is well ${FORGED_FILE_SHOWN}`), 'the path, escaped');
  const json = await cli(sb, ['--json', '--project', dir, 'status']);
  assertInert(t, json.stdout, 'the error as JSON');
  t.match(JSON.parse(json.stdout).error.message, dir, 'the original path in --json');
});

t.test("at a terminal our own colour works, and a name's colour and cursor codes do not", async (t) => {
  const sb = sandbox('inert-colour');
  const r = await atTerminal(sb, ['--project', join(sb.root, 'x\u001b[32mOK\u001b[39m\u001b[2K\u202e'), 'status']);
  t.ok(r.stderr.startsWith('\u001b[31mshadowcode:\u001b[39m '), 'the error is red');
  t.ok(r.stderr.includes('x\\x1b[32mOK\\x1b[39m\\x1b[2K\\u{202e}'), "the path's codes are shown, even those that look like ours");
  t.notOk(r.stderr.includes('\u001b[32m') || r.stderr.includes('\u001b[2K'), 'and do not reach the terminal');
});

t.test("the output of an approved command reaches the terminal escaped; --json keeps it as it was", async (t) => {
  const sb = sandbox('inert-test');
  await cli(sb, ['--project', sb.project, 'trust']);
  const script = `printf 'fine\\r\\033[2Kall tests passed\\033]0;owned\\007 \\342\\200\\256x\\n'; printf 'err\\033[8mhidden\\n' >&2`;
  const r = await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'sh', '-c', script]);
  t.equal(r.code, 0, 'the command ran');
  assertInert(t, r.stdout, 'its stdout');
  assertInert(t, r.stderr, 'its stderr');
  t.ok(r.stdout.includes('fine\\r\\x1b[2Kall tests passed\\x1b]0;owned\\x07 \\u{202e}x\n'), 'what it printed, escaped, its lines kept');
  t.ok(r.stderr.includes('err\\x1b[8mhidden\n'), 'its stderr too');
  const j = await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'sh', '-c', script]);
  assertInert(t, j.stdout, '--json');
  t.equal(JSON.parse(j.stdout).output_tail, 'fine\r\u001b[2Kall tests passed\u001b]0;owned\u0007 \u202ex\nerr\u001b[8mhidden\n', 'the original bytes in the JSON');
});

t.test("mcp and mcp tools show a definition's file name and a server's tool names and descriptions escaped", async (t) => {
  const sb = sandbox('inert-mcp');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const catalog = join(sb.root, 'tools.json');
  const schema = { type: 'object', properties: {} };
  writeFileSync(catalog, JSON.stringify([
    { name: `echo${ALL}`, description: `Echoes.\r\u001b[2KSafe: read-only, reviewed${ALL}`, inputSchema: schema },
    { name: 'plain', description: `line one\nline two \u202egnp.exe`, inputSchema: schema },
  ]));
  const dir = join(sb.project, '.shadowcode', 'mcp');
  mkdirSync(dir, { recursive: true });
  const file = `peer${ALL}.json`;
  writeFileSync(join(dir, file), JSON.stringify({ name: 'peer', command: [process.execPath, PEER, 'catalog-file', catalog] }));
  const id = `project:.shadowcode/mcp/${file}`;
  const idShown = `project:.shadowcode/mcp/peer${ALL_SHOWN}.json`;

  const list = await cli(sb, ['--project', sb.project, 'mcp']);
  t.equal(list.code, 0, 'mcp');
  assertInert(t, list.stdout, 'mcp');
  t.ok(list.stdout.includes(idShown), "the definition's id, escaped");
  const json = await cli(sb, ['--json', '--project', sb.project, 'mcp']);
  assertInert(t, json.stdout, 'mcp --json');
  const def = JSON.parse(json.stdout).definitions.find((d: { id: string }) => d.id === id);
  t.ok(def, 'the original id in --json');

  const enabled = await cli(sb, ['--project', sb.project, 'mcp', 'enable', id, '--hash', def.hash]);
  t.equal(enabled.code, 0, 'mcp enable');
  assertInert(t, enabled.stdout + enabled.stderr, 'mcp enable');
  const tools = await cli(sb, ['--project', sb.project, 'mcp', 'tools', id]);
  t.equal(tools.code, 0, 'mcp tools');
  assertInert(t, tools.stdout, 'mcp tools');
  t.ok(tools.stdout.startsWith(`${idShown}: catalog `), 'the server named escaped');
  t.ok(tools.stdout.includes(`echo${ALL_SHOWN}`), "the tool's name, escaped");
  t.ok(tools.stdout.includes('Echoes.\\r\\x1b[2KSafe: read-only, reviewed'), 'its description cannot overwrite itself');
  t.ok(tools.stdout.includes('line one'), "a description's first line");
  const toolsJson = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'mcp', 'tools', id])).stdout);
  t.same(toolsJson.tools.map((x: { name: string }) => x.name).sort(), [`echo${ALL}`, 'plain'].sort(), 'the original names in --json');
});

t.test('status and policy explain show a hostile project path and file path escaped', async (t) => {
  const sb = sandbox('inert-status');
  const project = join(sb.root, `proj${ALL}`);
  mkdirSync(project);
  const status = await cli(sb, ['--project', project, 'status']);
  t.equal(status.code, 0, 'status');
  assertInert(t, status.stdout, 'status');
  t.ok(status.stdout.includes(`proj${ALL_SHOWN}`), 'the project path, escaped');
  const explain = await cli(sb, ['--project', project, 'policy', 'explain', `file:write:${FORGED_FILE}`]);
  t.equal(explain.code, 0, 'policy explain');
  assertInert(t, explain.stdout, 'policy explain');
  t.ok(explain.stdout.includes(FORGED_FILE_SHOWN), 'the file path, escaped');
  const action = await cli(sb, ['policy', 'explain', `tool:x${ALL}`]);
  t.equal(action.code, 1, 'an action of that shape is refused');
  assertInert(t, action.stdout + action.stderr, 'policy explain of such an action');
});

t.test('a lone surrogate written to the terminal is shown as its escape', async (t) => {
  const sb = sandbox('inert-surrogate');
  const r = await cli(sb, ['--project', `x${LONE_SURROGATE.char}y`, 'status']);
  t.ok(r.stderr.includes(`project x${LONE_SURROGATE.shown}y does not exist`), 'shown, not turned into a replacement character');
  assertInert(t, r.stderr, 'the error line');
});

t.test("mcp serve's protocol is for the client program: a project path with a bidi override arrives byte for byte", async (t) => {
  const sb = sandbox('inert-serve');
  const project = join(sb.root, 'a\u202eb\u200bc');
  mkdirSync(project);
  const lines = [INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'shadow_status', arguments: {} } }];
  const r = await spawnCli(sb, ['--project', project, 'mcp', 'serve'], `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  t.equal(r.code, 0, 'served and ended with its input');
  const answers = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const status = answers.find((a) => a.id === 2);
  t.ok(status?.result, 'the tool answered, in valid JSON');
  t.ok(JSON.stringify(status.result.structuredContent).includes(JSON.stringify(project).slice(1, -1)), 'with the exact project path');
});
