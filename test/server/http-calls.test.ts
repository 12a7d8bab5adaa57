// A plain 2026-07-28 tools/call over HTTP (src/server/http-calls.ts) is answered past the
// SDK's handler, with the status, content type and body the SDK gives; anything else, however
// close, still goes to the SDK, which checks it as before.
import t from 'tap';
import { plainHttpCall } from '../../src/server/http-calls.js';
import { cli, sandbox } from '../fixtures/env.js';
import { auth, JSON_HEADERS, raw, startGateway } from '../fixtures/http.js';

type Msg = Record<string, unknown>;

const MODERN = '2026-07-28';
const envelope = (extra: Msg = {}) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, ...extra });
const body = (id: number | string, name: string, args?: Msg, meta: Msg = envelope()) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...(args ? { arguments: args } : {}), _meta: meta } });
const headers = (name: string, extra: Record<string, string> = {}) => ({ ...JSON_HEADERS, ...auth(), 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name, ...extra });
// Decision ids and times are fresh per call; everything else must match.
const same = (s: string) => s.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>').replace(/"ms":\d+/g, '"ms":N');

let port: number;
t.before(async () => {
  const sb = sandbox('http-calls');
  await cli(sb, ['--project', sb.project, 'trust']);
  const gw = await startGateway(sb);
  t.teardown(() => gw.stop());
  port = gw.port;
});

const ask = (b: Msg, h: Record<string, string>) => raw(port, { headers: h, body: JSON.stringify(b) });

t.test('a plain call gets the answer the SDK gives the same call: status, content type and body', async (t) => {
  // The reference goes to the SDK: the same request with the client's title in its envelope, which the fast path leaves alone.
  const viaSdk = (b: Msg) => ({ ...b, params: { ...(b.params as Msg), _meta: envelope({ 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1', title: 'Raw' } }) } });
  const cases: Array<[string, Msg | undefined]> = [
    ['shadow_status', undefined],
    ['shadow_status', {}],
    ['shadow_memory', { action: 'read' }],
    // Refused by the gate (a read-only gateway): an error result, not an HTTP error.
    ['shadow_memory', { action: 'append', text: 'a note' }],
    ['shadow_goal', { action: 'list' }],
    ['shadow_jobs', {}],
  ];
  for (const [i, [name, args]] of cases.entries()) {
    const b = body(100 + i, name, args);
    t.ok(plainHttpCall(b, Object.fromEntries(Object.entries(headers(name)).map(([k, v]) => [k, [v]]))), `${name}: plain`);
    const ours = await ask(b, headers(name));
    const sdk = await ask(viaSdk(b), headers(name));
    t.equal(sdk.status, 200, `${name}: the SDK answers it`);
    t.equal(ours.status, sdk.status, `${name}: the same status`);
    t.equal(ours.headers['content-type'], sdk.headers['content-type'], `${name}: the same content type`);
    t.equal(same(ours.body), same(sdk.body), `${name} ${JSON.stringify(args)}: the same body, byte for byte`);
  }
  const denied = JSON.parse((await ask(body(200, 'shadow_memory', { action: 'append', text: 'x' }), headers('shadow_memory'))).body);
  t.equal(denied.result.isError, true, 'the refusal is the tool\'s error result');
  t.equal(denied.result.resultType, 'complete');
  t.same(Object.keys(denied.result).slice(-2), ['resultType', '_meta'], 'stamped last, as the SDK stamps');
});

t.test('a string id is answered with that id', async (t) => {
  const r = await ask(body('abc', 'shadow_status'), headers('shadow_status'));
  t.equal(r.status, 200);
  t.equal(JSON.parse(r.body).id, 'abc');
  t.match(r.body, /"jsonrpc":"2.0","id":"abc"\}$/);
});

t.test('what the SDK checks is still checked: near misses go to the SDK and get its answer', async (t) => {
  const name = 'shadow_status';
  const b = body(7, name);
  // Each of these is refused by the SDK; taken past it, each would have been answered 200.
  const refused: Array<[string, Msg, Record<string, string>]> = [
    ['the Mcp-Name header names another tool', b, headers('shadow_jobs')],
    ['the Mcp-Method header names another method', b, headers(name, { 'mcp-method': 'tools/list' })],
    ['the header names another revision', b, headers(name, { 'mcp-protocol-version': '2025-11-25' })],
    ['the envelope names another revision', body(7, name, undefined, envelope({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' })), headers(name)],
    ['the envelope has no capabilities', body(7, name, undefined, { 'io.modelcontextprotocol/protocolVersion': MODERN }), headers(name)],
  ];
  for (const [why, rb, rh] of refused) {
    const hs = Object.fromEntries(Object.entries(rh).map(([k, v]) => [k, [v]]));
    t.notOk(plainHttpCall(rb, hs), `${why}: not plain`);
    const r = await ask(rb, rh);
    t.not(r.status, 200, `${why}: the SDK refuses it (${r.status})`);
  }
  // Accepted by the SDK, but not of the plain shapes: the SDK answers them, as before.
  const accepted: Array<[string, Msg, Record<string, string>]> = [
    ['only JSON is accepted', b, headers(name, { accept: 'application/json' })],
    ['a progress token', { ...b, params: { ...(b.params as Msg), _meta: envelope({ progressToken: 'p' }) } }, headers(name)],
  ];
  for (const [why, rb, rh] of accepted) {
    const hs = Object.fromEntries(Object.entries(rh).map(([k, v]) => [k, [v]]));
    t.notOk(plainHttpCall(rb, hs), `${why}: not plain`);
    const r = await ask(rb, rh);
    t.equal(r.status, 200, `${why}: answered by the SDK`);
    t.match(JSON.parse(r.body), { jsonrpc: '2.0', result: { resultType: 'complete' } });
  }
  // Plain in shape, but with no call the gate could decide (an unknown tool, arguments its schema refuses):
  // the gateway hands them to the SDK, whose handler reports them as before.
  for (const [why, rb, tool] of [['arguments the tool refuses', body(8, name, { nope: 1 }), name], ['an unknown tool', body(9, 'shadow_nothing'), 'shadow_nothing']] as const) {
    const r = await ask(rb, headers(tool));
    t.equal(r.status, 200, `${why}: answered`);
    t.match(JSON.parse(r.body), { result: { isError: true, resultType: 'complete' } }, `${why}: as an error result`);
  }
});
