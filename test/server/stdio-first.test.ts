// The first answers over stdio (src/server/stdio-first.ts): initialize and tools/list are
// answered before the SDK loads, byte for byte as the SDK answers them; everything else,
// and everything after, is the SDK's, which is told what the client said first.
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/client';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import t from 'tap';
import { firstAnswer, LEGACY_REVISIONS, StdioOpening } from '../../src/server/stdio-first.js';
import { connection, sandbox, sleep, until } from '../fixtures/env.js';
import { sdkAnswers, Wire } from '../fixtures/stdio-wire.js';
import { INIT, raw } from '../fixtures/mcp.js';
import { v1 } from '../fixtures/sdk-v1.js';

type Msg = Record<string, unknown>;

/** The initialize an official client sends first, caught on a wire that never answers (then the client is closed). */
async function sentBy(client: { connect(t: Transport): Promise<unknown>; close(): Promise<void> }): Promise<Msg> {
  const wire = new Wire();
  void client.connect(wire).catch(() => undefined);
  await wire.sentUntil(() => wire.sent.length > 0, 5000);
  await client.close();
  return wire.sent[0] as Msg;
}

t.test('the revisions answered before the SDK loads are exactly the SDK\'s 2025-era ones', async (t) => {
  t.same([...LEGACY_REVISIONS], SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v < '2026'));
});

t.test('every initialize answered before the SDK loads is answered byte for byte as the SDK answers it', async (t) => {
  const sb = sandbox('first-initialize');
  const c = await connection(sb);
  t.teardown(() => c.close());
  // A shape clients send, and, half the time, one near miss of it: a wrong type, an extra key,
  // a field the SDK knows and this module leaves to it, an unknown revision.
  const good = fc.record({
    protocolVersion: fc.constantFrom(...LEGACY_REVISIONS),
    capabilities: fc.record({ roots: fc.constantFrom({}, { listChanged: true }, { listChanged: false }), sampling: fc.constant({}), elicitation: fc.constant({}), experimental: fc.constant({}) }, { requiredKeys: [] }),
    clientInfo: fc.record({ name: fc.string(), version: fc.string(), title: fc.string() }, { requiredKeys: ['name', 'version'] }),
  });
  const miss: Array<(p: any) => void> = [
    (p) => (p.protocolVersion = '2026-07-28'),
    (p) => (p.protocolVersion = '1999-01-01'),
    (p) => (p.protocolVersion = 20250618),
    (p) => (p.capabilities = []),
    (p) => (p.capabilities = null),
    (p) => (p.capabilities.roots = { listChanged: 'yes' }),
    (p) => (p.capabilities.roots = { listChanged: true, extra: 1 }),
    (p) => (p.capabilities.roots = true),
    (p) => (p.capabilities.sampling = { tools: {} }),
    (p) => (p.capabilities.sampling = 'yes'),
    (p) => (p.capabilities.elicitation = { form: {}, url: {} }),
    (p) => (p.capabilities.experimental = { x: {} }),
    (p) => (p.capabilities.tasks = {}),
    (p) => (p.capabilities.other = {}),
    (p) => delete p.capabilities,
    (p) => delete p.clientInfo,
    (p) => delete p.clientInfo.version,
    (p) => (p.clientInfo.name = 7),
    (p) => (p.clientInfo.title = null),
    (p) => (p.clientInfo.icons = []),
    (p) => (p.clientInfo.websiteUrl = 'https://example.com'),
    (p) => (p._meta = {}),
    (p) => (p.extra = true),
  ];
  const params = fc.tuple(good, fc.option(fc.constantFrom(...miss.keys()), { freq: 2 })).map(([p, m]) => {
    const copy = structuredClone(p) as any;
    if (m !== null) miss[m]!(copy);
    return copy;
  });
  const id = fc.oneof(fc.integer(), fc.string({ minLength: 1, maxLength: 8 }));
  let answered = 0;
  let left = 0;
  await fc.assert(
    fc.asyncProperty(id, params, async (id, params) => {
      const m = { jsonrpc: '2.0', id, method: 'initialize', params };
      const ours = firstAnswer(m, false);
      if (!ours) return void left++;
      answered++;
      const [sdk] = await sdkAnswers(c.conn, [m]);
      return JSON.stringify(ours) === sdk;
    }),
    { numRuns: 400 },
  );
  t.ok(answered > 40 && left > 40, `both kinds were tried (${answered} answered early, ${left} left to the SDK)`);
});

t.test('the tool list answered before the SDK loads is byte for byte the SDK\'s', async (t) => {
  const sb = sandbox('first-tools');
  const c = await connection(sb);
  t.teardown(() => c.close());
  for (const params of [undefined, {}]) {
    const list = { jsonrpc: '2.0', id: 'list', method: 'tools/list', ...(params ? { params } : {}) };
    const [, sdk] = await sdkAnswers(c.conn, [INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }, list]);
    t.equal(JSON.stringify(firstAnswer(list, true)), sdk, `params ${JSON.stringify(params)}`);
  }
  t.equal(firstAnswer({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 'x' } }, true), undefined, 'a page cursor is the SDK\'s');
  t.equal(firstAnswer({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, false), undefined, 'before initialize, the SDK decides');
  t.equal(firstAnswer({ jsonrpc: '2.0', id: 2, method: 'ping' }, true), undefined);
});

t.test('the initialize the official clients send is one answered before the SDK loads', async (t) => {
  const v2 = await sentBy(new Client({ name: 'probe', version: '1' }, { versionNegotiation: { mode: 'legacy' } } as never));
  t.equal(v2.method, 'initialize');
  t.ok(firstAnswer(v2, false), `v2 client: ${JSON.stringify(v2.params)}`);
  const old = await sentBy(new (v1().Client)({ name: 'probe', version: '1' }) as never);
  t.equal(old.method, 'initialize');
  t.ok(firstAnswer(old, false), `v1 client: ${JSON.stringify(old.params)}`);
});

t.test('after the first answers, the SDK serves the rest in order, a reused id included', async (t) => {
  const sb = sandbox('first-handover');
  const s = raw(sb);
  t.teardown(() => void s.child.kill('SIGKILL'));
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'shadow_status', arguments: {} } };
  // All in one write: the call and the ping arrive while the SDK loads, and the call reuses initialize's id.
  s.child.stdin.write([INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, call, { jsonrpc: '2.0', id: 3, method: 'ping' }].map((m) => `${JSON.stringify(m)}\n`).join(''));
  const lines = () => s.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  await until(() => lines().length >= 4, 15000);
  const got = lines();
  t.equal(got.length, 4, 'one answer per request');
  t.equal(got[0].result.serverInfo.name, 'shadowcode', 'initialize first');
  t.equal(got[1].result.tools[0].name, 'shadow_status', 'then the tool list');
  const byId = new Map(got.slice(2).map((m) => [m.id, m]));
  t.equal(byId.get(1)?.result?.structuredContent?.connection?.transport, 'stdio', 'the call that reused id 1 is answered, not taken for the replay');
  t.same(byId.get(3)?.result, {});
  s.child.stdin.end();
  t.equal(await s.exit, 0);
  t.equal(s.stderr(), '', 'the SDK accepted the initialize it was told about');
});

t.test('a request reusing the id of the replayed initialize gets its own answer, however slow the replay', async (t) => {
  // A stand-in for the SDK that answers initialize late and anything else at once.
  const client = new Wire();
  const sdkSaw: Msg[] = [];
  const opening = new StdioOpening(
    client,
    async (wire) => {
      wire.onmessage = (m) => {
        const msg = m as unknown as Msg;
        sdkSaw.push(msg);
        if (msg.id === undefined) return;
        const answer = { jsonrpc: '2.0', id: msg.id, result: { from: msg.method } } as unknown as JSONRPCMessage;
        if (msg.method === 'initialize') setTimeout(() => void wire.send(answer), 50);
        else void wire.send(answer);
      };
      return { close: async () => undefined };
    },
    () => undefined,
    5000,
  );
  const say = (m: Msg) => client.onmessage?.(m as unknown as JSONRPCMessage);
  say(INIT);
  say({ jsonrpc: '2.0', method: 'notifications/initialized' });
  say({ jsonrpc: '2.0', id: 1, method: 'x/again' });
  await until(() => client.sent.length >= 2, 5000);
  await sleep(100);
  t.same(sdkSaw.map((m) => m.method), ['initialize', 'notifications/initialized', 'x/again'], 'the SDK is told the opening, then the rest, in order');
  t.same(client.sent.map((m) => (m.result as Msg).from ?? Object.keys(m.result as Msg)[0]), ['protocolVersion', 'x/again'], 'the client gets our initialize answer and the SDK\'s answer to its request, nothing else');
  await opening.close();
});

t.test('an initialize of another shape is the SDK\'s to answer, as before', async (t) => {
  const sb = sandbox('first-other');
  const answer = async (m: Msg) => {
    const s = raw(sb);
    t.teardown(() => void s.child.kill('SIGKILL'));
    s.child.stdin.end(`${JSON.stringify(m)}\n`);
    await s.exit;
    return JSON.parse(s.stdout().split('\n')[0] as string);
  };
  // Two servers at once: neither writes anything the other reads.
  const [odd, bad] = await Promise.all([
    answer({ ...INIT, params: { ...INIT.params, capabilities: { sampling: { tools: {} }, elicitation: { form: {} } } } }),
    answer({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {} } }),
  ]);
  t.equal(odd.result?.protocolVersion, '2025-06-18');
  t.equal(odd.result?.serverInfo?.name, 'shadowcode');
  t.equal(bad.error?.code, -32603, 'an initialize without clientInfo is refused by the SDK, with its own code');
  t.match(bad.error?.message, /clientInfo/);
});
