// The gateway's TCP front, in this process so its limits can be small and its
// deadlines long: past the connection cap a burst gets 503 with Retry-After
// and is never read or run; pipelined requests behind the first never run.
import { connect as tcpConnect, type Socket } from 'node:net';
import t from 'tap';
import { cli, sandbox } from '../fixtures/env.js';
import { auth, JSON_HEADERS, raw, TOKEN } from '../fixtures/http.js';

const LEGACY = { ...JSON_HEADERS, 'mcp-protocol-version': '2025-06-18' };
const append = (id: number, text: string) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'shadow_memory', arguments: { action: 'append', text } } });
const read = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 'shadow://memory' } });

async function gateway(t: any, http: Record<string, number>) {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const { Engine } = await import('../../src/engine/engine.js');
  const { shippedPolicy } = await import('../../src/policy/load.js');
  const { enforce } = await import('../../src/policy/gate.js');
  const { getProject } = await import('../../src/store/projects.js');
  const { startHttpGateway } = await import('../../src/server/http.js');
  const shipped = shippedPolicy();
  const policy = { ...shipped, limits: { ...shipped.limits, http_server: { ...shipped.limits.http_server, ...http } } };
  const engine = new Engine(sb.profile, policy, sb.env);
  const p = getProject(engine.db(), sb.project);
  const request = { action: 'cli:serve.http', principal: { kind: 'cli' as const, owner: 'cli', allow_write: true, allow_approvals: true }, project: { path: p.path, trusted: p.trusted, level: p.level } };
  const gw = await enforce({ policy, db: () => engine.db() }, request, (ticket) =>
    startHttpGateway(ticket, { engine, project: sb.project, allowWrite: true, allowApprovals: false, bind: { host: '127.0.0.1', port: 0 }, allowedHosts: [], token: TOKEN, log: () => undefined }),
  );
  t.teardown(async () => {
    await gw.close();
    await engine.shutdown();
  });
  // Once held connections are let go, the server may take a moment to see them close: a 503 until then.
  const served = async (body: string) => {
    for (;;) {
      const r = await raw(gw.port, { headers: { ...LEGACY, ...auth() }, body });
      if (r.status !== 503) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
  };
  const note = async () => JSON.parse(JSON.parse((await served(read)).body.replace(/^event: message\ndata: /, '').trim()).result.contents[0].text).content;
  return { gw, note, served };
}

function hold(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect(port, '127.0.0.1', () => {
      s.write('POST /mcp HTTP/1.1\r\n');
      resolve(s);
    });
    s.on('error', reject);
  });
}

t.test('past the connection cap, a burst gets 503 with Retry-After: 1 and nothing in it runs', async (t) => {
  const { gw, note, served } = await gateway(t, { connections: 4, header_deadline_ms: 600000 });
  const held = await Promise.all(Array.from({ length: 4 }, () => hold(gw.port)));
  const burst = await Promise.all(
    Array.from({ length: 60 }, (_, i) => raw(gw.port, { headers: { ...LEGACY, ...auth() }, body: append(i, `burst ${i}`) }).then((r) => r, (e: Error) => ({ status: -1, headers: {} as Record<string, string>, body: e.message }))),
  );
  t.same([...new Set(burst.map((r) => r.status))], [503], 'every one answered 503, none reset');
  t.ok(burst.every((r) => r.headers['retry-after'] === '1' && r.headers.connection === 'close' && r.body === ''), 'with Retry-After: 1 and Connection: close');
  for (const s of held) s.destroy();
  t.equal(await note(), '', 'the refused requests were never read or run');
  const ok = await served(append(1, 'after'));
  t.equal(ok.status, 200, 'served again once the held connections went');
  t.equal(await note(), 'after');
});

t.test('past busy_connections waiting for their 503, a connection is closed at once', async (t) => {
  const { gw } = await gateway(t, { connections: 1, busy_connections: 0, header_deadline_ms: 600000 });
  const held = await hold(gw.port);
  const r = await raw(gw.port, { headers: { ...LEGACY, ...auth() }, body: read }).then(
    (x) => x.status,
    (e: NodeJS.ErrnoException) => e.code,
  );
  t.match(String(r), /^(ECONNRESET|EPIPE)$/, `closed without an answer (${r})`);
  held.destroy();
});

t.test('a request pipelined behind the first on one connection is never read or run', async (t) => {
  const { gw, note } = await gateway(t, { header_deadline_ms: 600000 });
  const req = (body: string) => `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const got = await new Promise<string>((resolve) => {
    const s = tcpConnect(gw.port, '127.0.0.1', () => s.write(req(read) + req(append(2, 'pipelined'))));
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('error', () => undefined);
    s.on('close', () => resolve(out));
  });
  t.equal(got.match(/^HTTP\/1\.1 /gm)?.length, 1, 'one answer, to the first');
  t.match(got, /^HTTP\/1\.1 200 /);
  t.equal(await note(), '', 'the second, an append, did not run');
});
