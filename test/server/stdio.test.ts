// The stdio server as a process: framing limits, lifecycle, and a stdout that
// carries protocol only.
import t, { type Test } from 'tap';
import { INIT, raw } from '../fixtures/mcp.js';
import { cli, sandbox } from '../fixtures/env.js';

function protocolOnly(t: Test, out: string): void {
  for (const line of out.split('\n').filter(Boolean)) {
    const msg = JSON.parse(line);
    t.equal(msg.jsonrpc, '2.0', 'every stdout line is a JSON-RPC message');
  }
}

// A server that is sent nothing, started before the other tests so that its 10 s
// deadline runs out while they run; its own test, further down, waits for the rest.
const silent = { s: raw(sandbox()), started: Date.now() };

t.test('end of input after a request exits 0, having answered it', async (t) => {
  const sb = sandbox();
  const s = raw(sb);
  s.child.stdin.end(`${JSON.stringify(INIT)}\n`);
  t.equal(await s.exit, 0);
  const reply = JSON.parse(s.stdout().split('\n')[0] as string);
  t.equal(reply.id, 1);
  t.equal(reply.result.serverInfo.name, 'shadowcode');
  protocolOnly(t, s.stdout());
  t.equal(s.stderr(), '', 'nothing logged on a clean EOF');
});

t.test('requests already received when input ends are still answered', async (t) => {
  const sb = sandbox();
  const s = raw(sb);
  const call = (id: number, name: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
  s.child.stdin.end([JSON.stringify(INIT), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), call(2, 'shadow_understand'), call(3, 'shadow_doctor'), ''].join('\n'));
  t.equal(await s.exit, 0);
  const ids = s.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l).id);
  t.same(ids.sort(), [1, 2, 3]);
});

const hostile: Array<[string, () => string | Buffer, RegExp]> = [
  ['malformed JSON', () => '{"jsonrpc":"2.0",,}\n', /protocol failure \(malformed\)/],
  ['an oversized frame without a newline', () => Buffer.alloc(1048577, 0x61), /protocol failure \(oversized\): a frame is larger than 1048576 bytes/],
  ['a batch', () => `[${JSON.stringify(INIT)}]\n`, /protocol failure \(batch\)/],
  ['a flood of blank lines', () => '\n'.repeat(200), /protocol failure \(flood\): more than 128 frames in one second/],
];

for (const [name, input, why] of hostile) {
  t.test(`${name} closes the connection with a clear stderr line`, async (t) => {
    const sb = sandbox();
    const s = raw(sb);
    s.child.stdin.write(input());
    t.equal(await s.exit, 1);
    t.match(s.stderr(), why);
    t.equal(s.stdout(), '', 'nothing on stdout');
  });
}

t.test('input truncated inside a frame is a protocol failure', async (t) => {
  const sb = sandbox();
  const s = raw(sb);
  s.child.stdin.end(`${JSON.stringify(INIT)}\n{"jsonrpc":"2.0","id":2,"meth`);
  t.equal(await s.exit, 1);
  t.match(s.stderr(), /protocol failure \(truncated\)/);
  protocolOnly(t, s.stdout());
});

t.test('more than 32 MiB over a connection closes it', async (t) => {
  const sb = sandbox();
  const s = raw(sb);
  s.child.stdin.write(`${JSON.stringify(INIT)}\n`);
  // 40 frames of ~900 KiB each: under the frame cap and the frame rate, over the lifetime cap.
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/ping-pad', params: { pad: 'x'.repeat(900 * 1024) } });
  for (let i = 0; i < 40 && s.child.exitCode === null; i++) {
    if (!s.child.stdin.write(`${note}\n`)) await Promise.race([new Promise((r) => s.child.stdin.once('drain', r)), s.exit]);
  }
  t.equal(await s.exit, 1);
  t.match(s.stderr(), /protocol failure \(lifetime\): more than 33554432 bytes/);
});

t.test('a connection that sends no request within 10 s is closed', async (t) => {
  const { s, started } = silent;
  t.equal(await s.exit, 1);
  t.ok(Date.now() - started >= 9500, 'not before the deadline');
  t.match(s.stderr(), /no request within 10000 ms of start/);
});

t.test('mcp serve refuses --json, a missing workspace, and --allow-approvals alone', async (t) => {
  const sb = sandbox();
  const json = await cli(sb, ['--json', '--project', sb.project, 'mcp', 'serve']);
  t.equal(json.code, 2);
  t.match(JSON.parse(json.stdout).error.message, /cannot be combined with --json/);
  const ws = await cli(sb, ['mcp', 'serve']);
  t.match(ws.stderr, /\[SC_WORKSPACE_REQUIRED\]/);
  const appr = await cli(sb, ['--project', sb.project, 'mcp', 'serve', '--allow-approvals']);
  t.equal(appr.code, 2);
  t.match(appr.stderr, /--allow-approvals needs --allow-write/);
});
