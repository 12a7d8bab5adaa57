// The outbound tools/call sent past the SDK client (src/client/fast-calls.ts) against the SDK
// client's own request path, both on one real connection to a real subprocess peer, over our
// own stdio transport as McpConnection uses it (its framer hands on any JSON object, so a
// malformed answer reaches the client): the same answers, the same errors, the same
// cancellations, the same bytes on the wire.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import t, { type Test } from 'tap';
import { FastCalls, textOnly } from '../../src/client/fast-calls.js';
import { PeerGuard } from '../../src/client/peer-guard.js';
import { openStdio, type StdioTransport } from '../../src/client/stdio.js';
import { enforce } from '../../src/policy/gate.js';
import { until } from '../fixtures/env.js';
import { EVERYTHING, PEER, world } from '../fixtures/mcp-client.js';

interface Peer {
  readonly client: Client;
  readonly fast: FastCalls;
  readonly transport: StdioTransport;
  /** Every line the peer received, as it came. */
  readonly raw: () => string[];
}

/** A client as McpConnection.open makes it (no capabilities, 'auto' negotiation), on PeerGuard over our stdio transport, with the fast path wired. */
async function connect(t: Test, argv: string[] = [PEER, 'ok']): Promise<Peer> {
  const w = await world();
  // In the project: the peer runs in the sandbox, which lets it write only there.
  const log = join(w.sb.project, 'raw.log');
  const lim = w.policy.limits.stdio_client;
  const principal = { kind: 'engine', owner: 'test:owner', allow_write: true, allow_approvals: false } as const;
  const project = { path: w.sb.project, trusted: true, level: 'workspace', network: false } as const;
  const transport = await enforce(w.gateEnv, { action: 'mcp:connect', principal, project, requested_level: 'workspace', resource: { kind: 'mcp_server', id: 'peer', endpoint_kind: 'loopback' }, args: { definition: 'peer', transport: 'stdio' } }, (ticket) =>
    openStdio(ticket, { argv: [process.execPath, ...argv], cwd: w.sb.project, env: { PATH: process.env.PATH ?? '', PEER_RAW: log }, graceMs: lim.kill_grace_ms, frames: lim, stderrBytes: lim.stderr_capture_bytes, network: false, policy: w.policy, db: w.db }),
  );
  const guard = new PeerGuard(transport);
  const client = new Client({ name: 'shadowcode', version: 'test' }, { capabilities: {}, versionNegotiation: { mode: 'auto', probe: { timeoutMs: 10_000, maxRetries: 0 } }, inputRequired: { autoFulfill: false } });
  client.onerror = () => {};
  await client.connect(guard, { timeout: 10_000 });
  const fast = FastCalls.for(client, guard);
  if (!fast) throw new Error('a 2025-era connection should take the fast path');
  guard.calls = fast;
  t.teardown(async () => {
    await client.close();
    await transport.cleanup();
  });
  return { client, fast, transport, raw: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) };
}

type Settled = { ok: string } | { err: string; code: unknown; message: string; data: unknown };
const settle = (p: Promise<unknown>): Promise<Settled> =>
  p.then(
    (v) => ({ ok: JSON.stringify(v) }),
    (e: { constructor: { name: string }; code?: unknown; message: string; data?: unknown }) => ({ err: e.constructor.name, code: e.code, message: e.message, data: e.data }),
  );

const viaSdk = (p: Peer, args: Record<string, unknown>, timeout = 10_000, signal = new AbortController().signal, name = 'echo') =>
  p.client.request({ method: 'tools/call', params: { name, arguments: args } }, { timeout, maxTotalTimeout: timeout, signal });
const viaFast = (p: Peer, args: Record<string, unknown>, timeout = 10_000, signal = new AbortController().signal, name = 'echo') => p.fast.call(name, args, timeout, signal);

t.test('answers, tool errors and unusual valid results come back as the SDK client returns them, key for key', async (t) => {
  const p = await connect(t);
  for (const text of ['hello', 'fail', 'extra-keys', 'no-content', 'result-type', 'image']) {
    const sdk = await settle(viaSdk(p, { text }));
    const fast = await settle(viaFast(p, { text }));
    t.ok('ok' in sdk, `${text}: the SDK accepts it`);
    t.equal(JSON.stringify(fast), JSON.stringify(sdk), `${text}: the same value, the same key order`);
  }
  // What the comparison rests on: the SDK's check normalises (a missing content becomes []; resultType is dropped).
  t.same(JSON.parse((await settle(viaFast(p, { text: 'no-content' })) as { ok: string }).ok).content, []);
  t.notMatch((await settle(viaFast(p, { text: 'result-type' })) as { ok: string }).ok, /resultType/);
});

t.test('a text-only answer skips the SDK\'s check only where that check returns it unchanged', async (t) => {
  const p = await connect(t);
  const codec = (p.client as unknown as { _wireCodec(): { validateResult(m: string, r: unknown): { ok: boolean; value?: unknown } } })._wireCodec();
  const sdk = (r: unknown) => codec.validateResult('tools/call', structuredClone(r));
  const text = (s: string) => ({ type: 'text', text: s });
  const taken = [
    { content: [] },
    { content: [text('')] },
    { content: [text('a'), text('ünï\u0000cødé \u{1f600}'), text('x'.repeat(10_000))], isError: true },
    { content: [text('b')], isError: false },
  ];
  // Random ones: up to five blocks of random text, with or without isError.
  for (let i = 0; i < 200; i++) {
    const blocks = Array.from({ length: i % 6 }, () => text(String.fromCharCode(...Array.from({ length: (i * 7) % 40 }, () => Math.floor(Math.random() * 0xd7ff)))));
    taken.push(i % 3 ? { content: blocks } : { content: blocks, isError: i % 2 === 0 });
  }
  for (const r of taken) {
    t.ok(textOnly(r), 'taken as text only');
    const out = sdk(r);
    t.ok(out.ok, 'and the SDK accepts it');
    if (JSON.stringify(out.value) !== JSON.stringify(r)) t.fail(`the SDK would return something else for ${JSON.stringify(r).slice(0, 200)}`);
  }
  const left = [
    { isError: false, content: [text('order')] },
    { content: [{ text: 'order', type: 'text' }] },
    { content: [text('a')], isError: 'yes' },
    { content: [text('a')], structuredContent: { a: 1 } },
    { content: [text('a')], _meta: {} },
    { _meta: {}, content: [text('a')] },
    { content: [{ ...text('a'), annotations: { audience: ['user'] } }] },
    { content: [{ ...text('a'), '': 1 }] },
    { content: [{ type: 'image', text: 'a' }] },
    { content: [{ type: 'text', text: 1 }] },
    { content: [null] },
    { content: [[]] },
    { content: 'text' },
    { content: [text('a')], isError: true, extra: 1 },
    {},
  ];
  for (const r of left) t.notOk(textOnly(r), `left to the SDK's check: ${JSON.stringify(r)}`);
});

t.test('a JSON-RPC error and a result that fails the SDK\'s check fail with the SDK client\'s error', async (t) => {
  const p = await connect(t);
  for (const text of ['rpc-error', 'rpc-error-plain', 'not-an-array', 'bad-block']) {
    const sdk = await settle(viaSdk(p, { text }));
    const fast = await settle(viaFast(p, { text }));
    t.ok('err' in sdk, `${text}: the SDK refuses it`);
    t.same(fast, sdk, `${text}: the same error class, code, message and data`);
  }
  const e = (await settle(viaFast(p, { text: 'rpc-error' }))) as { code: unknown; data: unknown };
  t.equal(e.code, -32000, 'the server\'s own code');
  t.same(e.data, { why: 'asked' }, 'and its data');
});

t.test('what the SDK does not take for an answer is not taken either: the call runs out its time and the server is told', async (t) => {
  const p = await connect(t);
  for (const text of ['array-result', 'bad-error', 'no-jsonrpc']) {
    const sdk = await settle(viaSdk(p, { text }, 300));
    const fast = await settle(viaFast(p, { text }, 300));
    t.match(sdk, { err: 'SdkError', message: 'Request timed out' }, `${text}: the SDK times out`);
    t.same(fast, sdk, `${text}: so does the fast path`);
  }
  const cancelled = () => p.raw().filter((l) => l.includes('notifications/cancelled'));
  await until(() => cancelled().length >= 6);
  const cancels = cancelled();
  t.equal(cancels.length, 6, 'each call that timed out was cancelled on the wire');
  t.equal(new Set(cancels.map((l) => l.replace(/"requestId":\d+/, ''))).size, 1, 'with the same notification but for the id');
});

t.test('the request on the wire is the SDK\'s, byte for byte but for its id, and ids never repeat', async (t) => {
  const p = await connect(t);
  await viaSdk(p, { text: 'same', n: 1, nested: { a: [1, 'b'] } });
  await viaFast(p, { text: 'same', n: 1, nested: { a: [1, 'b'] } });
  await viaSdk(p, { text: 'same', n: 1, nested: { a: [1, 'b'] } });
  const calls = p.raw().filter((l) => l.includes('"tools/call"'));
  t.equal(calls.length, 3);
  const ids = calls.map((l) => JSON.parse(l).id as number);
  t.equal(new Set(ids).size, 3, 'each call its own id, from the SDK\'s one counter');
  t.same(ids, [...ids].sort((a, b) => a - b), 'taken in order');
  const shapes = calls.map((l) => l.replace(/"id":\d+/, '"id":N'));
  t.equal(shapes[1], shapes[0], 'the fast path\'s line is the SDK\'s');
  t.equal(shapes[2], shapes[0]);
});

t.test('a caller\'s abort cancels: the same rejection, the same notification, and a late answer is dropped', async (t) => {
  const p = await connect(t);
  const abortAfter = (ms: number) => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('the task was cancelled')), ms);
    return ac.signal;
  };
  const sdk = await settle(viaSdk(p, { text: 'hang' }, 10_000, abortAfter(100)));
  const fast = await settle(viaFast(p, { text: 'hang' }, 10_000, abortAfter(100)));
  t.match(sdk, { err: 'SdkError', message: 'Error: the task was cancelled' });
  t.same(fast, sdk);
  const already = new AbortController();
  already.abort(new Error('before it began'));
  t.same(await settle(viaFast(p, { text: 'hello' }, 10_000, already.signal)), await settle(viaSdk(p, { text: 'hello' }, 10_000, already.signal)), 'a signal aborted before the call');
  // The peer logs what it reads as it reads it: wait for both notifications (and then for the answer below, which comes after them).
  await until(() => p.raw().filter((l) => l.includes('notifications/cancelled')).length >= 2);
  await viaFast(p, { text: 'sync' });
  const cancels = p.raw().filter((l) => l.includes('notifications/cancelled')).map((l) => JSON.parse(l));
  t.equal(cancels.length, 2, 'two cancellations; nothing was sent for the calls aborted before they began');
  t.same(cancels.map((c) => c.params.reason), ['Error: the task was cancelled', 'Error: the task was cancelled']);
  t.same(p.raw().filter((l) => l.includes('"text":"hello"')), [], 'and no request for them either');
  // The connection still answers after both.
  t.match(await viaFast(p, { text: 'after' }), { content: [{ type: 'text', text: 'echo: after' }] });
});

t.test('the connection closing fails a pending call as the SDK fails its own', async (t) => {
  const p = await connect(t);
  const sdk = settle(viaSdk(p, { text: 'hang' }));
  const fast = settle(viaFast(p, { text: 'hang' }));
  await new Promise((r) => setTimeout(r, 100));
  await p.transport.cleanup();
  const [s, f] = await Promise.all([sdk, fast]);
  t.match(s, { err: 'SdkError', message: 'Connection closed' });
  t.same(f, s);
  const later = await settle(viaSdk(p, { text: 'hello' }));
  t.match(later, { err: 'Error', message: 'Not connected' }, 'a call after the close');
  t.same(await settle(viaFast(p, { text: 'hello' })), later, 'fails the same way');
});

t.test('server-everything\'s tools over the fast path: the SDK\'s answers', async (t) => {
  const p = await connect(t, [EVERYTHING, 'stdio']);
  const cases: Array<[string, Record<string, unknown>]> = [['echo', { message: 'hi' }], ['get-sum', { a: 2, b: 3 }], ['get-structured-content', { location: 'New York' }], ['get-tiny-image', {}]];
  for (const [name, args] of cases) {
    const sdk = await settle(viaSdk(p, args, 10_000, undefined, name));
    t.ok('ok' in sdk, `${name} answers`);
    t.equal(JSON.stringify(await settle(viaFast(p, args, 10_000, undefined, name))), JSON.stringify(sdk), `${name}: the same result`);
  }
});

t.test('a 2026-07-28 connection is left to the SDK', async (t) => {
  const handler = toNodeHandler(createMcpHandler(() => new McpServer({ name: 'modern', version: '1.0.0' }), { legacy: 'stateless', responseMode: 'json' }));
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`));
  const client = new Client({ name: 'shadowcode', version: 'test' }, { capabilities: {}, versionNegotiation: { mode: 'auto', probe: { timeoutMs: 5_000, maxRetries: 0 } } });
  await client.connect(transport);
  t.teardown(() => client.close());
  t.equal(client.getProtocolEra(), 'modern');
  t.equal(FastCalls.for(client, transport), null, 'its requests carry the 2026 envelope, which only the SDK writes');
});
