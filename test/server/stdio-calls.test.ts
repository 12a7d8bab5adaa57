// A plain tools/call over stdio (src/server/stdio-calls.ts) is answered past the SDK's request
// path, byte for byte as the SDK answers it; anything else still goes to the SDK; a client's
// cancellation and the end of the connection stop what was taken.
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import t from 'tap';
import { buildServer } from '../../src/server/build.js';
import { callTool } from '../../src/server/dispatch.js';
import { plainCall } from '../../src/server/stdio-calls.js';
import { PRELOAD_IDLE_MS, type Served, StdioOpening } from '../../src/server/stdio-first.js';
import { connection, sandbox, sleep, until } from '../fixtures/env.js';
import { INIT, raw } from '../fixtures/mcp.js';
import { sdkAnswers, Wire } from '../fixtures/stdio-wire.js';

type Msg = Record<string, unknown>;
type Conn = Awaited<ReturnType<typeof connection>>;

const OPENING: Msg[] = [INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }];

/** `say` hands a message to the server as if it came over the wire; `answers` says messages and waits for the answer to each request among them, as sent. */
function speaking(wire: { onmessage?: ((m: JSONRPCMessage) => void) | undefined; sent: Array<{ id?: unknown }>; sentUntil: (ok: () => boolean, ms: number) => Promise<unknown> }) {
  const say = (m: Msg) => wire.onmessage?.(m as unknown as JSONRPCMessage);
  const answers = async (messages: Msg[]) => {
    const ids = messages.filter((m) => m.id !== undefined).map((m) => m.id);
    for (const m of messages) say(m);
    await wire.sentUntil(() => ids.every((id) => wire.sent.some((s) => s.id === id)), 5000);
    return ids.map((id) => JSON.stringify(wire.sent.find((s) => s.id === id)));
  };
  return { say, answers };
}

/** Our stdio opening on a wire, served as `mcp serve` serves it, with `call` counting what is taken past the SDK; nothing said yet. */
function serving(c: Conn, call?: Served['call']) {
  const wire = new Wire();
  const taken: string[] = [];
  const opening = new StdioOpening(
    wire,
    async (relay) => {
      const served = serveStdio(() => buildServer(c.conn), { legacy: 'serve', transport: relay });
      return {
        close: () => served.close(),
        call: (name, args, signal) => {
          taken.push(name);
          return call ? call(name, args, signal) : callTool(c.conn, name, args, signal);
        },
      };
    },
    () => undefined,
    5000,
  );
  return { wire, taken, opening, ...speaking(wire) };
}

/** The opening after a 2025-era client's initialize and first tools/list, with the SDK loaded. */
async function opened(c: Conn, call?: Served['call']) {
  const { wire, taken, opening, say, answers } = serving(c, call);
  for (const m of OPENING) say(m);
  // The first tools/list is answered before the SDK loads; the SDK is there once a ping comes back from it.
  say({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  say({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
  await wire.sentUntil(() => wire.sent.some((m) => m.id === 'ping'), 5000);
  return { wire, say, taken, answers, close: () => opening.close() };
}

// Decision ids are fresh per decision; everything else must match.
const same = (s: string) => s.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>');
const call = (id: number, name: unknown, args?: unknown, extra: Msg = {}): Msg => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...(args === undefined ? {} : { arguments: args }), ...extra } });

// Calls of every outcome: answered, an unknown tool, arguments refused, refused by the gate, read, looked up.
const PLAIN: Array<[string, unknown]> = [
  ['shadow_status', {}],
  ['shadow_status', undefined],
  ['no_such_tool', {}],
  ['shadow_status', { unexpected: true }],
  ['shadow_memory', { action: 'append', text: 'refused: this connection may not write' }],
  ['shadow_memory', { action: 'read' }],
  ['shadow_why', { decision_id: '00000000-0000-4000-8000-000000000000' }],
];

t.test('a plain tools/call is answered past the SDK, byte for byte as the SDK answers it', async (t) => {
  const sb = sandbox('calls-same');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const calls = [...PLAIN.map(([name, args], i) => call(11 + i, name, args)), { ...call(18, 'shadow_status', {}), id: 'a string id' }];
  const o = await opened(c);
  t.teardown(() => o.close());
  const ours = await o.answers(calls);
  t.same(o.taken, calls.map((m) => (m.params as Msg).name), 'every one of them was taken past the SDK');
  const sdk = await sdkAnswers(c.conn, [...OPENING, ...calls]);
  t.same(ours.map(same), sdk.slice(1).map(same));
  t.match(JSON.parse(ours[4]!).result, { isError: true, structuredContent: { error: { code: /^SC_POLICY_/, decision_id: /^[0-9a-f-]{36}$/ } } }, 'a refusal is decided by the gate on this path too');
});

t.test('anything but a plain tools/call still goes to the SDK, and gets its answer', async (t) => {
  const sb = sandbox('calls-sdk');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const odd = [
    call(11, 'shadow_status', {}, { _meta: { progressToken: 'p1' } }),
    call(12, 'shadow_status', {}, { extra: 1 }),
    call(13, 42, {}),
    call(14, 'shadow_status', ['not', 'an', 'object']),
    call(15, 'shadow_status', null),
    { jsonrpc: '2.0', id: 16, method: 'tools/call' },
    { jsonrpc: '2.0', id: 17, method: 'tools/call', params: { name: 'shadow_status' }, extra: true },
    { ...call(18, 'shadow_status', {}), id: 1.5, extra: true },
    { ...call(19, 'shadow_status', {}), id: 2 ** 53 + 2, extra: true },
  ];
  for (const m of odd) t.notOk(plainCall(m), `not plain: ${JSON.stringify(m)}`);
  const o = await opened(c);
  t.teardown(() => o.close());
  const ours = await o.answers(odd.filter((m) => m.extra === undefined));
  t.same(o.taken, [], 'none was taken past the SDK');
  const sdk = await sdkAnswers(c.conn, [...OPENING, ...odd.filter((m) => m.extra === undefined)]);
  t.same(ours.map(same), sdk.slice(1).map(same));
  t.match(JSON.parse(ours[2]!), { error: { code: -32602 } }, 'a name that is not a string is the SDK\'s invalid params');
});

t.test("a client's cancellation stops a call taken past the SDK, and nothing is answered for it", async (t) => {
  const sb = sandbox('calls-cancel');
  const c = await connection(sb);
  t.teardown(() => c.close());
  let reason: unknown;
  const slow = (_n: string, _a: unknown, signal: AbortSignal) =>
    new Promise<CallToolResult>((resolve) => {
      if (_n !== 'slow') return resolve({ content: [{ type: 'text', text: 'quick' }] });
      signal.addEventListener('abort', () => ((reason = signal.reason), resolve({ content: [{ type: 'text', text: 'too late' }] })));
    });
  const o = await opened(c, slow);
  t.teardown(() => o.close());
  o.say(call(11, 'slow', {}));
  o.say({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11, reason: 'the user pressed escape' } });
  const [quick] = await o.answers([call(12, 'quick', {})]);
  await sleep(50);
  t.equal(reason, 'the user pressed escape', "the call's signal aborted with the client's reason");
  t.notOk(o.wire.sent.some((m) => m.id === 11), 'the cancelled call is never answered');
  t.match(JSON.parse(quick!), { id: 12, result: { content: [{ text: 'quick' }] } }, 'the connection goes on');

  o.say(call(13, 'slow', {}));
  await o.close();
  await o.wire.close();
  await until(() => reason !== undefined && (reason as Error).message === 'the connection ended', 5000);
  t.notOk(o.wire.sent.some((m) => m.id === 13), 'a call still running when the connection ends is stopped, not answered');
});

t.test('over a real stdio connection the answers are the same, and each call is an audited decision', async (t) => {
  const sb = sandbox('calls-real');
  const s = raw(sb);
  t.teardown(() => void s.child.kill('SIGKILL'));
  const send = (...messages: Msg[]) => s.child.stdin.write(messages.map((m) => `${JSON.stringify(m)}\n`).join(''));
  const answered = (n: number) => until(() => s.stdout().split('\n').filter(Boolean).length >= n, 10000);
  send(...OPENING, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
  await answered(2);
  // Once the SDK has loaded (it answers ping), a call can be taken past it.
  send({ jsonrpc: '2.0', id: 3, method: 'ping' });
  await answered(3);
  send(call(4, 'shadow_status', {}), call(5, 'shadow_status', {}, { _meta: { progressToken: 1 } }));
  await answered(5);
  s.child.stdin.end();
  t.equal(await s.exit, 0);
  t.equal(s.stderr(), '');
  const byId = new Map(s.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l)).map((m) => [m.id, m]));
  t.same(byId.get(4).result, byId.get(5).result, 'the call past the SDK and the call through it answer the same');
  const audit = await connection(sb);
  t.teardown(() => audit.close());
  const { readAudit } = await import('../../src/store/audit.js');
  const decided = readAudit(audit.engine.db(), { kinds: ['decision'], limit: 1000 }).filter((r) => (r.body as Msg).action === 'tool:shadow_status');
  t.equal(decided.length, 2, 'both calls were decided and recorded by the gate');
});

/** Our stdio opening as `mcp serve` builds it, plain calls taken before the SDK loads included; `loaded` tells whether it did. */
function servingEarly(c: Conn, call?: Served['call']) {
  const wire = new Wire();
  const taken: string[] = [];
  const state = { loaded: false };
  const run: NonNullable<Served['call']> = (name, args, signal) => {
    taken.push(name);
    return call ? call(name, args, signal) : callTool(c.conn, name, args, signal);
  };
  const opening = new StdioOpening(
    wire,
    async (relay) => {
      state.loaded = true;
      const served = serveStdio(() => buildServer(c.conn), { legacy: 'serve', transport: relay });
      return { close: () => served.close(), call: run };
    },
    () => undefined,
    5000,
    run,
  );
  return { wire, taken, state, ...speaking(wire), close: () => opening.close() };
}

t.test('after an opening answered here, a plain call is answered before the SDK loads, byte for byte as the SDK answers it', async (t) => {
  const sb = sandbox('calls-early');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const list = { jsonrpc: '2.0', id: 'list', method: 'tools/list' };
  const calls = [...PLAIN.map(([name, args], i) => call(11 + i, name, args)), { ...call(18, 'shadow_status', {}), id: 'a string id' }];
  const o = servingEarly(c);
  t.teardown(() => o.close());
  const ours = await o.answers([...OPENING, list, ...calls]);
  t.notOk(o.state.loaded, 'the SDK was not loaded for the opening, the tool list or plain calls');
  t.same(o.taken, calls.map((m) => (m.params as Msg).name), 'every call was taken past the SDK');
  const sdk = await sdkAnswers(c.conn, [...OPENING, list, ...calls]);
  t.same(ours.map(same), sdk.map(same));
  t.match(JSON.parse(ours[6]!).result, { isError: true, structuredContent: { error: { code: /^SC_POLICY_/, decision_id: /^[0-9a-f-]{36}$/ } } }, 'a refusal is decided by the gate before the SDK loads too');

  // A message only the SDK answers loads it; it is told the opening, and plain calls are still taken past it.
  const [pong] = await o.answers([{ jsonrpc: '2.0', id: 'ping', method: 'ping' }]);
  t.ok(o.state.loaded, 'a ping loaded the SDK');
  t.same(JSON.parse(pong!), { result: {}, jsonrpc: '2.0', id: 'ping' }, 'and the SDK answered it');
  const [late] = await o.answers([call(30, 'shadow_status', {}), call(31, 'shadow_status', {}, { _meta: { progressToken: 1 } })]);
  t.same(o.taken.length, calls.length + 1, 'a plain call after the SDK loaded is taken past it, the one with a progress token is not');
  t.equal(JSON.parse(late!).result.structuredContent.connection.transport, 'stdio');
});

/** A tool `slow` that runs until its signal aborts (the reasons recorded), and any other that answers "quick" at once. */
function slowTool() {
  const reasons: unknown[] = [];
  const slow = (name: string, _a: unknown, signal: AbortSignal) =>
    new Promise<CallToolResult>((resolve) => {
      if (name !== 'slow') return resolve({ content: [{ type: 'text', text: 'quick' }] });
      signal.addEventListener('abort', () => (reasons.push(signal.reason), resolve({ content: [{ type: 'text', text: 'too late' }] })));
    });
  return { reasons, slow };
}

t.test('a call taken before the SDK loads: a cancellation stops it without loading the SDK, and the end of the connection stops the rest', async (t) => {
  const sb = sandbox('calls-early-cancel');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const { reasons, slow } = slowTool();
  const o = servingEarly(c, slow);
  for (const m of OPENING) o.say(m);
  o.say(call(11, 'slow', {}));
  o.say({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11, reason: 'the user pressed escape' } });
  const [quick] = await o.answers([call(12, 'quick', {})]);
  await sleep(50);
  t.same(reasons, ['the user pressed escape'], "the call's signal aborted with the client's reason");
  t.notOk(o.wire.sent.some((m) => m.id === 11), 'the cancelled call is never answered');
  t.match(JSON.parse(quick!), { id: 12, result: { content: [{ text: 'quick' }] } }, 'the connection goes on');
  t.notOk(o.state.loaded, 'the cancellation did not need the SDK');

  o.say(call(13, 'slow', {}));
  await o.wire.close();
  await o.close();
  await until(() => reasons.length === 2, 5000);
  t.equal((reasons[1] as Error).message, 'the connection ended');
  t.notOk(o.wire.sent.some((m) => m.id === 13), 'a call still running when the connection ends is stopped, not answered');
  t.notOk(o.state.loaded, 'a connection that never needed the SDK ends without loading it');
});

t.test('a call taken before the SDK loads: a cancellation that comes while the SDK loads still stops it', async (t) => {
  const sb = sandbox('calls-early-cancel-loading');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const { reasons, slow } = slowTool();
  const o = servingEarly(c, slow);
  t.teardown(() => o.close());
  for (const m of OPENING) o.say(m);
  o.say(call(11, 'slow', {}));
  t.same(o.taken, ['slow'], 'the call was taken past the SDK');
  t.notOk(o.state.loaded, 'before the SDK loaded');
  // The ping starts the SDK's load; the cancellation arrives while it loads, and waits with the ping.
  o.say({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
  o.say({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 11, reason: 'the user pressed escape' } });
  // Answered by the SDK after everything that waited for it was handed on, the cancellation included.
  await o.answers([{ jsonrpc: '2.0', id: 'ping2', method: 'ping' }]);
  t.ok(o.state.loaded, 'the SDK loaded');
  const [quick] = await o.answers([call(12, 'quick', {})]);
  t.match(JSON.parse(quick!), { id: 12, result: { content: [{ text: 'quick' }] } }, 'the connection goes on');
  t.same(reasons, ['the user pressed escape'], "the call's signal aborted with the client's reason");
  t.notOk(o.wire.sent.some((m) => m.id === 11), 'the cancelled call is never answered');
});

t.test('a connection that goes quiet after its tool list gets the SDK loaded, ready for what only it answers', async (t) => {
  const sb = sandbox('calls-early-idle');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const o = servingEarly(c);
  t.teardown(() => o.close());
  await o.answers([...OPENING, { jsonrpc: '2.0', id: 'list', method: 'tools/list' }]);
  t.notOk(o.state.loaded, 'not right after the tool list');
  await until(() => o.state.loaded, PRELOAD_IDLE_MS + 5000);
  const [res] = await o.answers([{ jsonrpc: '2.0', id: 'res', method: 'resources/list' }]);
  t.ok(JSON.parse(res!).result.resources.length > 0, 'the SDK answers resources/list');
  await o.answers([call(20, 'shadow_status', {})]);
  t.same(o.taken, ['shadow_status'], 'and plain calls are still taken past it');
});

// The 2026-07-28 revision over stdio: no initialize; every request carries the revision's envelope.
const META: Msg = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const DISCOVER: Msg = { jsonrpc: '2.0', id: 'discover', method: 'server/discover', params: { _meta: META } };
const mcall = (id: number | string, name: unknown, args?: unknown, meta: Msg = META, extra: Msg = {}): Msg => call(id as number, name, args, { _meta: meta, ...extra });

/** Our stdio opening, opened by a 2026-07-28 client: discovery, then `first` (which pins the era). */
async function openedModern(c: Conn, first: Msg[]) {
  const { taken, opening, answers } = serving(c);
  const opened = await answers([DISCOVER, ...first]);
  return { taken, answers, opened, close: () => opening.close() };
}

t.test('on a connection the SDK pinned to 2026-07-28, a plain call is answered past it, byte for byte as the SDK answers it', async (t) => {
  const sb = sandbox('calls-modern');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const pin = { jsonrpc: '2.0', id: 'pin', method: 'tools/list', params: { _meta: META } };
  const calls = [
    ...PLAIN.map(([name, args], i) => mcall(11 + i, name, args)),
    mcall(18, 'shadow_status', {}, { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'host', version: '2.0' } }),
    mcall(19, 'shadow_status', {}, { ...META, 'io.modelcontextprotocol/clientCapabilities': { roots: { listChanged: true }, sampling: {} } }),
    { ...mcall(20, 'shadow_status', {}), id: 'a string id' },
  ];
  const o = await openedModern(c, [pin]);
  t.teardown(() => o.close());
  t.match(JSON.parse(o.opened[1]!), { result: { resultType: 'complete' } }, 'the SDK answered the pinning request in the 2026-07-28 revision');
  const ours = await o.answers(calls);
  t.same(o.taken, calls.map((m) => (m.params as Msg).name), 'every one of them was taken past the SDK');
  const sdk = await sdkAnswers(c.conn, [DISCOVER, pin, ...calls]);
  t.same(ours.map(same), sdk.slice(2).map(same));
  t.match(JSON.parse(ours[0]!).result, { resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'shadowcode' } } });
  t.match(JSON.parse(ours[4]!).result, { isError: true, structuredContent: { error: { code: /^SC_POLICY_/ } } }, 'a refusal is decided by the gate on this path too');
});

t.test('a 2026-07-28 connection: nothing is taken before the SDK pins it, and near misses go to the SDK', async (t) => {
  const sb = sandbox('calls-modern-sdk');
  const c = await connection(sb);
  t.teardown(() => c.close());
  // The first call after discovery is the SDK's (it pins the era); the second is plain and taken.
  const first = mcall(10, 'shadow_status', {});
  const odd = [
    mcall(11, 'shadow_status', {}, { ...META, progressToken: 'p1' }),
    mcall(12, 'shadow_status', {}, { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'host', version: '2.0', title: 'Host' } }),
    mcall(13, 'shadow_status', {}, { ...META, 'example.com/extra': 1 }),
    mcall(14, 'shadow_status', {}, { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }),
    mcall(15, 'shadow_status', {}, META, { extra: 1 }),
    call(16, 'shadow_status', {}),
  ];
  const o = await openedModern(c, [first]);
  t.teardown(() => o.close());
  t.same(o.taken, [], 'the pinning call went to the SDK');
  const ours = await o.answers([...odd, mcall(17, 'shadow_status', {})]);
  t.same(o.taken, ['shadow_status'], 'only the plain call after the pin was taken');
  const sdk = await sdkAnswers(c.conn, [DISCOVER, first, ...odd, mcall(17, 'shadow_status', {})]);
  t.same(ours.map(same), sdk.slice(2).map(same));
  t.match(JSON.parse(ours[3]!), { error: { code: -32602 } }, 'an envelope without capabilities is the SDK\'s invalid params');
  t.ok(JSON.parse(ours[5]!).error, 'a 2025-shaped call on a 2026 connection is refused by the SDK');
});

t.test('a 2025-era connection the SDK opened is never taken for a 2026 one, whatever its requests carry', async (t) => {
  const sb = sandbox('calls-legacy-meta');
  const c = await connection(sb);
  t.teardown(() => c.close());
  // An initialize the opening leaves to the SDK (a capability it does not answer for): no legacy fast path either.
  const init = { ...INIT, id: 'init', params: { ...(INIT.params as Msg), capabilities: { tasks: {} } } };
  const { wire, taken, opening } = serving(c);
  t.teardown(() => opening.close());
  const msgs = [init, { jsonrpc: '2.0', method: 'notifications/initialized' }, mcall(21, 'shadow_status', {}), mcall(22, 'shadow_status', {}), mcall(23, 'shadow_status', {})];
  for (const m of msgs.slice(0, 3)) wire.onmessage?.(m as unknown as JSONRPCMessage);
  await wire.sentUntil(() => wire.sent.some((s) => s.id === 21), 5000);
  t.notOk((wire.sent.find((s) => s.id === 21)?.result as Msg | undefined)?.resultType, 'the SDK answered it in the 2025 revision');
  for (const m of msgs.slice(3)) wire.onmessage?.(m as unknown as JSONRPCMessage);
  await wire.sentUntil(() => [22, 23].every((id) => wire.sent.some((s) => s.id === id)), 5000);
  t.same(taken, [], 'nothing was taken past the SDK');
});
