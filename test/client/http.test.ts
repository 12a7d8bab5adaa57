// The Streamable HTTP client against real sockets: server-everything as a real subprocess,
// an SDK v2 server speaking the 2026-07-28 revision, and hostile in-process peers. Every
// connection is opened through the gate; each refusal names a stable code, and the peer's
// own request log shows that nothing was retried, re-initialized or followed.
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { activeConnections } from '../../src/client/connection.js';
import { openTarget } from '../../src/client/open.js';
import { enabledTargets } from '../../src/client/targets.js';
import { enforce, type GateRequest } from '../../src/policy/gate.js';
import { cli, until } from '../fixtures/env.js';
import { type HttpPeer, httpPeer, PEER_CANARY, type PeerMode } from '../fixtures/mcp-http-peer.js';
import { type ClientWorld, dbText, everythingHttp, grant as enable, processesWith, world } from '../fixtures/mcp-client.js';

const request = (w: ClientWorld, network = false): Omit<GateRequest, 'action' | 'resource' | 'args'> => ({
  principal: { kind: 'engine', owner: 'test:owner', allow_write: true, allow_approvals: false },
  project: { path: w.sb.project, trusted: true, level: 'workspace', network },
  requested_level: 'workspace',
});

// These tests drive the connection layer themselves: the grant is made without the review at
// mcp enable (which would start the server first), and open() reads as a review, so a first read pins.
const grant = (w: ClientWorld, name: string, def: Record<string, unknown>) => enable(w, name, def, { review: false });

async function open(w: ClientWorld, name: string, network = false) {
  const target = enabledTargets(w.db, w.sb.project, w.policy, w.secrets).find((x) => x.def.name === name);
  if (!target) throw new Error(`no target ${name}`);
  return openTarget(w.deps, request(w, network), w.sb.project, target, new AbortController().signal, true);
}

async function refusal(w: ClientWorld, name: string, network = false): Promise<{ code: string; message: string }> {
  try {
    const o = await open(w, name, network);
    await o.conn.close();
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('the connection was not refused');
}

const ticketFor = (w: ClientWorld) => enforce(w.gateEnv, { ...request(w), action: 'mcp:call', resource: { kind: 'mcp_tool', id: 'x' } }, (tk) => tk);
const call = async (w: ClientWorld, o: Awaited<ReturnType<typeof open>>, name: string, args: Record<string, unknown>) => o.conn.call(await ticketFor(w), name, args, new AbortController().signal);

async function peerWorld(t: Test, mode: PeerMode, extra: Record<string, unknown> = {}): Promise<{ w: ClientWorld; peer: HttpPeer }> {
  const peer = await httpPeer(mode);
  t.teardown(() => peer.close());
  const w = await world();
  await grant(w, `p-${mode}`, { url: peer.url, timeout_sec: 10, ...extra });
  return { w, peer };
}

t.afterEach(() => t.equal(activeConnections(), 0, 'every connection permit is back'));

t.test('server-everything over Streamable HTTP: initialize, discovery, an echo with real output, session DELETE at close', async (t) => {
  const srv = await everythingHttp(t);
  const w = await world();
  await grant(w, 'everything', { url: srv.url, timeout_sec: 30 });
  const o = await open(w, 'everything');
  t.teardown(() => o.conn.close());
  t.equal(o.conn.era, 'legacy', 'a 2025 server: the 2026-07-28 probe falls back to initialize');
  t.ok(o.catalog.some((x) => x.name === 'echo'), 'echo is in the catalog');
  t.equal(o.pin, 'pinned');
  const res = await call(w, o, 'echo', { message: 'hello over http' });
  t.match(JSON.stringify(res.content), /hello over http/);
  const report = await o.conn.close();
  t.equal(report.outcome, 'session_deleted', 'cleanup deleted the legacy session');
  await until(() => /Received session termination request for session/.test(srv.stdout()));
  t.pass('the server saw the DELETE for its session');
  await srv.stop();
  t.same(processesWith(srv.marker), [], 'nothing of the server is left in the process table');
});

t.test('an SDK v2 server on the 2026-07-28 revision: negotiated first, stateless, no session to delete', async (t) => {
  const methods: string[] = [];
  const handler = toNodeHandler(
    createMcpHandler(() => {
      const s = new McpServer({ name: 'modern', version: '1.0.0' });
      s.registerTool('shout', { description: 'upper-cases its text' }, async () => ({ content: [{ type: 'text', text: 'MODERN OK' }] }));
      return s;
    }, { legacy: 'stateless', responseMode: 'json' }),
  );
  const server = createHttpServer((req: IncomingMessage, res) => {
    methods.push(req.method ?? '');
    void handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  const w = await world();
  await grant(w, 'modern', { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, timeout_sec: 10 });
  const o = await open(w, 'modern');
  t.equal(o.conn.era, 'modern', 'the 2026-07-28 lifecycle was negotiated');
  t.same(o.catalog.map((x) => x.name), ['shout']);
  t.match(JSON.stringify((await call(w, o, 'shout', {})).content), /MODERN OK/);
  const report = await o.conn.close();
  t.equal(report.outcome, 'closed', 'no session: nothing to delete');
  t.notOk(methods.includes('DELETE'), 'no DELETE was sent');
  t.notOk(methods.includes('GET'), 'no standalone GET stream was opened');
});

t.test('a legacy peer with SSE answers: the call passes through; the bearer goes to the endpoint and nowhere else', async (t) => {
  const token = 'bearer-canary-93c1d7e5f0a2b4c6';
  const { w, peer } = await peerWorld(t, 'sse', { api_key_env: 'PEER_TOKEN' });
  w.env.PEER_TOKEN = token;
  const o = await open(w, 'p-sse');
  const res = await call(w, o, 'echo', { text: 'through sse' });
  t.match(JSON.stringify(res.content), /echo: through sse/);
  t.equal((await o.conn.close()).outcome, 'session_deleted');
  t.ok(peer.seen.length > 0 && peer.seen.every((s) => s.headers.authorization === `Bearer ${token}`), 'every request carried the bearer');
  t.ok(peer.seen.every((s) => s.path === '/mcp'), 'only the reviewed endpoint was asked');
  t.equal(peer.count('DELETE'), 1, 'one session DELETE');
  t.notMatch(dbText(w.db), token, 'the token is in no stored row');
});

t.test('a stored secret is the bearer; an unknown reference is refused before any request', async (t) => {
  const { w, peer } = await peerWorld(t, 'ok', { api_key_env: 'STORED_TOKEN' });
  const e = await refusal(w, 'p-ok');
  t.equal(e.code, 'SC_SECRET_NOT_FOUND', e.message);
  t.equal(peer.seen.length, 0, 'nothing was sent');
  const set = await cli(w.sb, ['secret', 'set', 'STORED_TOKEN'], 'stored-canary-55aa66bb77cc');
  t.equal(set.code, 0, set.stderr);
  const o = await open(w, 'p-ok');
  t.match(JSON.stringify((await call(w, o, 'echo', { text: 'x' })).content), /echo: x/);
  await o.conn.close();
  t.equal(peer.seen[0]?.headers.authorization, 'Bearer stored-canary-55aa66bb77cc');
  t.notMatch(dbText(w.db), 'stored-canary-55aa66bb77cc');
});

t.test('a redirect is not followed: the connection fails and nothing reaches the new location', async (t) => {
  const { w, peer } = await peerWorld(t, 'redirect', { api_key_env: 'PEER_TOKEN' });
  w.env.PEER_TOKEN = 'redirect-token-canary-1234';
  const e = await refusal(w, 'p-redirect');
  t.match(e.code, /^SC_MCP_(PROTOCOL|CONNECT_FAILED)$/, e.message);
  t.match(e.message, /redirect/);
  t.equal(peer.seen.filter((s) => s.path !== '/mcp').length, 0, 'the Location was never requested');
  t.equal(peer.seen.length, 1, 'one request, not retried');
  t.notMatch(e.message, 'redirect-token-canary');
});

t.test('an expired legacy session fails the call; there is no second initialize and no retry', async (t) => {
  const { w, peer } = await peerWorld(t, 'expire');
  const o = await open(w, 'p-expire');
  const e = await call(w, o, 'echo', { text: 'once' }).then(
    () => ({ code: 'none', message: 'the call answered' }),
    (err) => err as { code: string; message: string },
  );
  t.equal(e.code, 'SC_MCP_SESSION_EXPIRED', e.message);
  t.match(e.message, /no longer knows this session/);
  await o.conn.close();
  t.equal(peer.count('initialize'), 1, 'initialized once');
  t.equal(peer.count('tools/call'), 1, 'the call was sent once');
  t.equal(peer.count('DELETE'), 0, 'an expired session is not deleted');
  await t.rejects(call(w, o, 'echo', { text: 'again' }), { code: /^SC_MCP_/ }, 'the closed connection refuses further calls');
  t.equal(peer.count('tools/call'), 1);
});

t.test('oversized, flooding and overlong answers fail the connection with SC_MCP_PROTOCOL', async (t) => {
  const cases: Array<[PeerMode, RegExp, 'open' | 'call']> = [
    ['big-json', /body is larger than 1048576/, 'open'],
    ['big-sse', /SSE event is larger than 1048576/, 'call'],
    ['flood', /more than 128 SSE events in one second/, 'call'],
    ['long-event-id', /event id is longer than 4096/, 'call'],
    ['long-session', /session id is longer than 1024/, 'open'],
    ['big-header', /headers are larger than 16384/, 'call'],
    ['sse-cut', /stream ended before/, 'call'],
  ];
  for (const [mode, msg, when] of cases) {
    const { w, peer } = await peerWorld(t, mode);
    let e: { code: string; message: string };
    if (when === 'open') e = await refusal(w, `p-${mode}`);
    else {
      const o = await open(w, `p-${mode}`);
      e = await call(w, o, 'echo', { text: 'x' }).then(
        () => ({ code: 'none', message: 'answered' }),
        (err) => err,
      );
      const report = await o.conn.close();
      t.equal(report.outcome, 'session_deleted', `${mode}: the live session is still deleted at cleanup`);
      t.equal(peer.count('DELETE'), 1, `${mode}: one DELETE`);
    }
    t.equal(e.code, 'SC_MCP_PROTOCOL', `${mode}: ${e.message}`);
    t.match(e.message, msg, `${mode}: the limit is named`);
    t.equal(peer.count('initialize'), 1, `${mode}: one initialize`);
    t.ok(peer.count('tools/call') <= 1, `${mode}: no call was repeated`);
    t.notOk(peer.seen.some((x) => x.headers['last-event-id'] !== undefined), `${mode}: no SSE resumption was attempted`);
  }
});

t.test('a call whose socket is dropped fails once; the POST is not sent again', async (t) => {
  const { w, peer } = await peerWorld(t, 'drop');
  const o = await open(w, 'p-drop');
  await t.rejects(call(w, o, 'echo', { text: 'x' }), { code: /^SC_MCP_(CONNECT_FAILED|CALL_FAILED)$/ });
  await o.conn.close();
  t.equal(peer.count('tools/call'), 1, 'the call was sent once');
  t.equal(peer.count('initialize'), 1, 'no re-initialize');
});

t.test('an auth challenge and a peer error body stay out of every diagnostic', async (t) => {
  for (const mode of ['auth', 'error-body'] as const) {
    const { w, peer } = await peerWorld(t, mode, { api_key_env: 'PEER_TOKEN' });
    w.env.PEER_TOKEN = 'challenge-token-canary-8877';
    const e = await refusal(w, `p-${mode}`);
    t.match(e.code, /^SC_MCP_CONNECT_FAILED$/, `${mode}: ${e.message}`);
    t.notMatch(JSON.stringify({ ...e, message: e.message }), PEER_CANARY, `${mode}: the peer's text is not in the error`);
    t.notMatch(e.message, 'challenge-token-canary', `${mode}: the token is not in the error`);
    t.notMatch(dbText(w.db), PEER_CANARY, `${mode}: nor in any stored row`);
    t.ok(peer.count('initialize') <= 1, `${mode}: no login or re-initialize followed`);
    t.ok(peer.seen.length <= 2, `${mode}: the probe and at most one initialize, nothing retried (${peer.seen.length})`);
  }
});

t.test('a non-loopback endpoint needs the project network permission; plain http there is refused outright', async (t) => {
  const w = await world();
  // TEST-NET-1: never routed, so a refusal that is not the policy's would show as a timeout.
  await grant(w, 'remote', { url: 'https://192.0.2.10/mcp', timeout_sec: 2 });
  const e = await refusal(w, 'remote');
  t.equal(e.code, 'SC_POLICY_DENIED', e.message);
  t.match(e.message, /remote-model-needs-network|network/);
  const dir = `${w.sb.project}/.shadowcode/mcp`;
  const { writeFileSync } = await import('node:fs');
  writeFileSync(`${dir}/plain.json`, JSON.stringify({ name: 'plain', url: 'http://192.0.2.10/mcp', api_key_env: 'X_TOKEN' }));
  const view = JSON.parse((await cli(w.sb, ['--json', '--project', w.sb.project, 'mcp'])).stdout);
  const plain = view.definitions.find((d: { id: string }) => d.id === 'project:.shadowcode/mcp/plain.json');
  t.match(JSON.stringify(plain), /SC_DEF_INVALID/, 'plain http to another host is not a definition that can be granted');
  t.match(JSON.stringify(plain), /plain http is only for loopback/);
});

t.test('proxies from the environment are not used', async (t) => {
  let proxied = 0;
  const proxy = createHttpServer((_req, res) => {
    proxied++;
    res.writeHead(502).end();
  });
  proxy.on('connect', (_req, sock) => {
    proxied++;
    sock.destroy();
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (proxy.closeAllConnections(), proxy.close(() => r()))));
  const purl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const names = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy'];
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  t.teardown(() => {
    for (const n of names) saved[n] === undefined ? delete process.env[n] : (process.env[n] = saved[n]);
  });
  const { w, peer } = await peerWorld(t, 'ok');
  for (const n of names) (process.env[n] = purl), (w.env[n] = purl);
  delete process.env.NO_PROXY;
  delete process.env.no_proxy;
  const o = await open(w, 'p-ok');
  t.match(JSON.stringify((await call(w, o, 'echo', { text: 'direct' })).content), /echo: direct/);
  await o.conn.close();
  t.equal(proxied, 0, 'the proxy saw nothing');
  t.ok(peer.count('initialize') === 1 && peer.count('tools/call') === 1, 'the peer was reached directly');
});

t.test('cancelling a call whose answer stream is open ends it at once: the stream is closed, nothing is sent again, cleanup still deletes the session', async (t) => {
  const { w, peer } = await peerWorld(t, 'sse-hold');
  const o = await open(w, 'p-sse-hold');
  const ac = new AbortController();
  const pending = o.conn.call(await ticketFor(w), 'echo', { text: 'wait' }, ac.signal);
  await until(() => peer.count('tools/call') === 1);
  ac.abort();
  await t.rejects(pending, { code: 'SC_CANCELLED', message: /echo was cancelled before the server answered/ });
  await until(() => peer.released() === 1, 5000);
  t.equal(peer.released(), 1, 'the held answer stream was closed by the client');
  const report = await o.conn.close();
  t.equal(report.outcome, 'session_deleted');
  t.equal(peer.count('tools/call'), 1, 'the call was not sent again');
  t.equal(peer.count('notifications/cancelled'), 1, 'the server was told');
  t.equal(peer.count('initialize'), 1);
});
