// A plain tools/call over stdio (src/server/stdio-calls.ts) is answered past the SDK's request
// path, byte for byte as the SDK answers it; anything else still goes to the SDK; a client's
// cancellation and the end of the connection stop what was taken.
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import t from 'tap';
import { buildServer } from '../../src/server/build.js';
import { callTool } from '../../src/server/dispatch.js';
import { plainCall } from '../../src/server/stdio-calls.js';
import { type Served, StdioOpening } from '../../src/server/stdio-first.js';
import { connection, sandbox, sleep, until } from '../fixtures/env.js';
import { INIT, raw } from '../fixtures/mcp.js';
import { sdkAnswers, Wire } from '../fixtures/stdio-wire.js';

type Msg = Record<string, unknown>;
type Conn = Awaited<ReturnType<typeof connection>>;

const OPENING: Msg[] = [INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }];

/** Our stdio opening on a wire, served as `mcp serve` serves it, with `call` counting what is taken past the SDK. */
async function opened(c: Conn, call?: Served['call']) {
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
  const say = (m: Msg) => wire.onmessage?.(m as unknown as JSONRPCMessage);
  for (const m of OPENING) say(m);
  // The first tools/list is answered before the SDK loads; the SDK is there once a ping comes back from it.
  say({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  say({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
  await wire.sentUntil(() => wire.sent.some((m) => m.id === 'ping'), 5000);
  const answers = async (messages: Msg[]) => {
    const ids = messages.filter((m) => m.id !== undefined).map((m) => m.id);
    for (const m of messages) say(m);
    await wire.sentUntil(() => ids.every((id) => wire.sent.some((s) => s.id === id)), 5000);
    return ids.map((id) => JSON.stringify(wire.sent.find((s) => s.id === id)));
  };
  return { wire, say, taken, answers, close: () => opening.close() };
}

// Decision ids are fresh per decision; everything else must match.
const same = (s: string) => s.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>');
const call = (id: number, name: unknown, args?: unknown, extra: Msg = {}): Msg => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...(args === undefined ? {} : { arguments: args }), ...extra } });

t.test('a plain tools/call is answered past the SDK, byte for byte as the SDK answers it', async (t) => {
  const sb = sandbox('calls-same');
  const c = await connection(sb);
  t.teardown(() => c.close());
  const calls = [
    call(11, 'shadow_status', {}),
    call(12, 'shadow_status'),
    call(13, 'no_such_tool', {}),
    call(14, 'shadow_status', { unexpected: true }),
    call(15, 'shadow_memory', { action: 'append', text: 'refused: this connection may not write' }),
    call(16, 'shadow_memory', { action: 'read' }),
    call(17, 'shadow_why', { decision_id: '00000000-0000-4000-8000-000000000000' }),
    { ...call(18, 'shadow_status', {}), id: 'a string id' },
  ];
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
