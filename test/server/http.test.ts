// The HTTP gateway as a process: the official clients over Streamable HTTP, and
// every guard as its own refusal.
import { readdirSync, readFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import t from 'tap';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';
import { auth, type Gateway, httpClient, INIT_BODY, JSON_HEADERS, raw, startGateway, TOKEN } from '../fixtures/http.js';

async function gateway(t: any, flags: string[] = [], token: 'env' | 'stored' = 'env') {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  if (token === 'stored') await cli(sb, ['secret', 'set', 'SHADOW_MCP_HTTP_TOKEN'], TOKEN);
  const gw = await startGateway(sb, flags, token === 'stored' ? {} : undefined);
  t.teardown(() => gw.stop());
  return { sb, gw };
}

// One read-only gateway, started once, for the tests that only send it requests: none
// of them changes what another sees. Together they stay far below the rate limit, and
// the connection-cap test waits until its connections are gone. Tests that write,
// stop the gateway, read its whole stderr or use up the rate limit start their own.
// Its token is in the profile's secret store, not in its environment: the secret-store test
// asks that of it, and to the others it makes no difference where the token came from.
let readOnly: Awaited<ReturnType<typeof gateway>>;
// The slow-client cut-off takes 5 s of waiting: its two connections are opened first and
// checked in their own test, so the tests in between run while the gateway waits them out.
// They hold two of the 32 connection places; the tests before theirs use a few at most,
// and the connection-cap test comes after it, once the gateway has closed them.
let slowCut: Promise<[number, number]>;
t.before(async () => {
  readOnly = await gateway(t, [], 'stored');
  const { gw } = readOnly;
  const headers = await held(gw.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\n`);
  const body = await held(gw.port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`);
  slowCut = Promise.all([headers.closed, body.closed]);
});

// One writable gateway for the three client flavors and the batch refusal: each of them
// appends to the project memory and checks only its own line, so none disturbs another.
let writable: Promise<Awaited<ReturnType<typeof gateway>>> | undefined;
const writableGateway = () => (writable ??= gateway(t, ['--allow-write']));

for (const flavor of ['v2-modern', 'v2-legacy', 'v1'] as const) {
  t.test(`${flavor} over HTTP: discovery, a tool call and a resource`, async (t) => {
    const { gw, sb } = await writableGateway();
    const c = await httpClient(gw.url, flavor);
    t.teardown(() => c.close());
    if (flavor !== 'v1') t.equal((c as any).era, flavor === 'v2-modern' ? 'modern' : 'legacy');
    t.equal((await c.listTools()).tools.length, 17);
    const s = await c.callTool({ name: 'shadow_status', arguments: {} });
    t.match(s.structuredContent, { project: { path: sb.project, trusted: true }, connection: { transport: 'http', allow_write: true } });
    const m = await c.callTool({ name: 'shadow_memory', arguments: { action: 'append', text: `via ${flavor}` } });
    const line = new RegExp(`(^|\\n)via ${flavor}$`);
    t.match(m.structuredContent.content, line, 'the append is the last line of the memory');
    t.match(JSON.parse((await c.readResource({ uri: 'shadow://memory' })).contents[0].text).content, line);
  });
}

t.test('each request is answered for its own method, in both eras: tools, resources, templates, prompts; a method not served is "method not found"', async (t) => {
  const { gw, sb } = readOnly;
  for (const flavor of ['v2-modern', 'v2-legacy'] as const) {
    const c = (await httpClient(gw.url, flavor)) as any;
    t.teardown(() => c.close());
    t.equal((await c.listTools()).tools.length, 17, `${flavor}: tools/list`);
    t.match((await c.callTool({ name: 'shadow_status', arguments: {} })).structuredContent, { project: { path: sb.project } }, `${flavor}: tools/call`);
    t.same((await c.listResources()).resources.map((r: any) => r.uri), ['shadow://project', 'shadow://sessions', 'shadow://memory', 'shadow://plan'], `${flavor}: resources/list`);
    t.same((await c.listResourceTemplates()).resourceTemplates, [], `${flavor}: resources/templates/list`);
    t.match(JSON.parse((await c.readResource({ uri: 'shadow://project' })).contents[0].text), { path: sb.project }, `${flavor}: resources/read`);
    t.same((await c.listPrompts()).prompts.map((p: any) => p.name), ['delegate', 'understand'], `${flavor}: prompts/list`);
    t.match((await c.getPrompt({ name: 'understand' })).messages[0].content.text, /without changing anything/, `${flavor}: prompts/get`);
  }
  // A method no handler of ours serves: the SDK's own answer, as before.
  const modern = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const r = await raw(gw.port, {
    headers: { ...JSON_HEADERS, ...auth(), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'shadow/nothing' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'shadow/nothing', params: { _meta: modern } }),
  });
  t.match(JSON.parse(r.body), { jsonrpc: '2.0', id: 7, error: { code: -32601 } }, 'an unknown method');
});

t.test('one gateway is one owner for every caller holding its token', async (t) => {
  const { gw } = readOnly;
  const a = await httpClient(gw.url, 'v2-modern');
  const b = await httpClient(gw.url, 'v1');
  const oa = (await a.callTool({ name: 'shadow_status', arguments: {} })).structuredContent.connection.owner;
  await a.close();
  const ob = (await b.callTool({ name: 'shadow_status', arguments: {} })).structuredContent.connection.owner;
  await b.close();
  t.equal(oa, ob);
  t.match(oa, /^http:\d+:[0-9a-f]{8}$/);
});

t.test('a read-only gateway refuses writes by rule', async (t) => {
  const { gw } = readOnly;
  const c = await httpClient(gw.url, 'v2-modern');
  t.teardown(() => c.close());
  const r = await c.callTool({ name: 'shadow_memory', arguments: { action: 'append', text: 'x' } });
  t.match(r.content[0].text, /write-needs-flag/);
});

t.test('Host variants that DNS rebinding would send are refused with 403', async (t) => {
  const { gw } = readOnly;
  const ok = await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY });
  t.equal(ok.status, 200, 'the bound IP with the real port');
  t.equal((await raw(gw.port, { host: `localhost:${gw.port}`, headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY })).status, 200, 'localhost with the real port');
  for (const host of [`attacker.example:${gw.port}`, 'attacker.example', `127.0.0.1:${gw.port + 1}`, 'localhost', `127.0.0.2:${gw.port}`, `[::1]:${gw.port}`, `0.0.0.0:${gw.port}`]) {
    const r = await raw(gw.port, { host, headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY });
    t.equal(r.status, 403, host);
    t.equal(r.body, '', 'no detail');
  }
});

t.test("only the gateway's own Origin is accepted, and it still needs the token", async (t) => {
  const { gw } = readOnly;
  const h = { ...JSON_HEADERS, ...auth() };
  for (const origin of [`http://127.0.0.1:${gw.port}`, `http://localhost:${gw.port}`, `HTTP://LOCALHOST:${gw.port}`]) {
    t.equal((await raw(gw.port, { headers: { ...h, origin }, body: INIT_BODY })).status, 200, origin);
  }
  t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, origin: `http://127.0.0.1:${gw.port}` }, body: INIT_BODY })).status, 401, 'own origin without the token');
  const others = [`http://127.0.0.1:${gw.port + 1}`, `https://127.0.0.1:${gw.port}`, `http://127.0.0.1:${gw.port}/`, `http://[::1]:${gw.port}`, `http://127.0.0.2:${gw.port}`, 'http://localhost', `http://evil.example:${gw.port}`, `http://localhost.evil.example:${gw.port}`, 'null', ''];
  for (const origin of others) t.equal((await raw(gw.port, { headers: { ...h, origin }, body: INIT_BODY })).status, 403, origin);
});

t.test('a JSON-RPC batch is refused with 400 and a JSON-RPC error, and nothing in it runs', async (t) => {
  const { gw } = await writableGateway();
  const memory = async () => {
    const c = await httpClient(gw.url, 'v2-modern');
    const text = JSON.parse((await c.readResource({ uri: 'shadow://memory' })).contents[0].text).content as string;
    await c.close();
    return text;
  };
  const before = await memory();
  const legacy = { ...JSON_HEADERS, ...auth(), 'mcp-protocol-version': '2025-06-18' };
  const append = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'shadow_memory', arguments: { action: 'append', text: `batched ${id}` } } });
  for (const body of [JSON.stringify([append(1), append(2)]), ` \n\t[${JSON.stringify(append(3))}]`, '[]']) {
    const r = await raw(gw.port, { headers: legacy, body });
    t.equal(r.status, 400, body.slice(0, 40));
    t.match(JSON.parse(r.body), { jsonrpc: '2.0', id: null, error: { code: -32600, message: /batches are not accepted/ } });
  }
  const after = await memory();
  t.equal(after, before, 'no append in any batch ran');
  t.notMatch(after, /batched/);
});

t.test('missing, wrong, short, queried and duplicated tokens are refused', async (t) => {
  const { gw } = readOnly;
  const h = JSON_HEADERS;
  const missing = await raw(gw.port, { headers: h, body: INIT_BODY });
  t.equal(missing.status, 401);
  t.equal(missing.body, '', '401 with no detail');
  t.equal((await raw(gw.port, { headers: { ...h, ...auth(`${TOKEN.slice(0, -1)}X`) }, body: INIT_BODY })).status, 401, 'wrong');
  t.equal((await raw(gw.port, { headers: { ...h, ...auth(TOKEN.slice(0, 20)) }, body: INIT_BODY })).status, 401, 'short prefix');
  t.equal((await raw(gw.port, { headers: { ...h, authorization: TOKEN }, body: INIT_BODY })).status, 401, 'no scheme');
  t.equal((await raw(gw.port, { path: `/mcp?token=${TOKEN}`, headers: h, body: INIT_BODY })).status, 400, 'in the query');
  t.equal((await raw(gw.port, { headers: { ...h, authorization: [`Bearer ${TOKEN}`, 'Bearer other'] as never }, body: INIT_BODY })).status, 400, 'duplicated');
  t.equal((await raw(gw.port, { headers: { ...h, ...auth(), 'mcp-method': ['initialize', 'tools/call'] }, body: INIT_BODY })).status, 400, 'duplicated Mcp-Method');
  t.equal((await raw(gw.port, { headers: { ...h, ...auth(), 'x-forwarded-host': 'evil.example' }, body: INIT_BODY })).status, 400, 'a forwarded host that disagrees');
});

t.test('GET and DELETE get 405; other methods and paths 404', async (t) => {
  const { gw } = readOnly;
  t.equal((await raw(gw.port, { method: 'GET', headers: auth() })).status, 405);
  t.equal((await raw(gw.port, { method: 'DELETE', headers: auth() })).status, 405);
  t.equal((await raw(gw.port, { method: 'PUT', headers: auth() })).status, 404);
  t.equal((await raw(gw.port, { path: '/other', headers: auth() })).status, 404);
  t.equal((await raw(gw.port, { path: '/sse', headers: auth() })).status, 404);
});

t.test('a body over 1 MiB is refused with 413', async (t) => {
  const { gw } = readOnly;
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(1048576) } });
  t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: big })).status, 413);
});

function held(port: number, data: string): Promise<{ socket: Socket; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(port, '127.0.0.1', () => {
      socket.write(data);
      const opened = Date.now();
      resolve({ socket, closed: new Promise((r) => socket.on('close', () => r(Date.now() - opened))) });
    });
    socket.on('error', () => {});
    socket.on('error', reject);
  });
}

t.test('slow headers and slow bodies are cut off at 5 s', async (t) => {
  const [a, b] = await slowCut;
  t.ok(a >= 4500 && a < 9000, `headers cut after ${a} ms`);
  t.ok(b >= 4500 && b < 9000, `body cut after ${b} ms`);
});

t.test('the 33rd concurrent connection gets 503 with Retry-After: 1, its request unread', async (t) => {
  const { gw } = readOnly;
  const open = await Promise.all(Array.from({ length: 32 }, () => held(gw.port, 'POST /mcp HTTP/1.1\r\n')));
  const extra = await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY });
  t.equal(extra.status, 503);
  t.equal(extra.headers['retry-after'], '1');
  t.equal(extra.headers.connection, 'close');
  for (const o of open) o.socket.destroy();
  let again = 503;
  // The gateway may take a moment to see them close; until then it keeps answering 503.
  for (; again === 503; await new Promise((r) => setTimeout(r, 50))) again = (await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY })).status;
  t.equal(again, 200, 'and the gateway serves again once they go');
});

// One gateway for the rate limit and the burst. The rate-limit test goes first, on a window
// nothing has hit yet; the burst after it only asks that every answer is one of three.
t.test('under load', async (t) => {
  const { gw } = await gateway(t);

  t.test('more than 128 requests in a second get 429', async (t) => {
    // Every request is a whole connection (the gateway serves one request on each), and at most
    // 32 may be open, so the requests go out as a pool of 24 in flight: each one answered makes
    // room for the next at once, none waits for the slowest of a batch. Each is the same bytes
    // written on a plain socket and only its status line read, so a busy machine spends its time
    // in the gateway, not in building requests. The window slides: 429 comes as soon as 129
    // requests were judged within one second of each other.
    const request = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(INIT_BODY)}\r\nConnection: close\r\n\r\n${INIT_BODY}`;
    const status = () =>
      new Promise<number>((resolve) => {
        let head = '';
        const socket = tcpConnect(gw.port, '127.0.0.1', () => socket.end(request));
        socket.setEncoding('latin1');
        socket.on('data', (d) => (head += d));
        socket.on('error', () => resolve(0));
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1] ?? 0)));
      });
    const statuses: number[] = [];
    const started = Date.now();
    const inFlight = 24;
    const worker = async () => {
      // Until the limiter answers 429 (or 20 s pass on a machine too busy to send 129 in a second).
      while (!statuses.includes(429) && Date.now() - started < 20000) statuses.push(await status());
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    const first429 = statuses.indexOf(429);
    t.ok(first429 >= 0, `saw 429 among ${statuses.length} requests`);
    // Answers are listed as they came; up to inFlight - 1 sent before the 128th may come after it.
    t.ok(first429 >= 128 - inFlight, `at least a second's worth of requests were judged before it (${first429})`);
    t.ok(statuses.slice(0, Math.max(0, first429 - inFlight)).every((s) => s === 401), 'the ones before were judged normally (401 without a token)');
  });

  t.test('a burst of 300 simultaneous requests is answered, none reset', async (t) => {
    const burst = await Promise.all(
      Array.from({ length: 300 }, () =>
        raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY }).then(
          (r) => r,
          (e: NodeJS.ErrnoException) => ({ status: 0, headers: {} as Record<string, string>, body: String(e.code) }),
        ),
      ),
    );
    const resets = burst.filter((r) => r.status === 0);
    t.same(resets.map((r) => r.body), [], 'no connection was reset');
    // Which ones are served depends on the machine's speed; each is served (200), rate-limited (429) or told to come back (503).
    t.same([...new Set(burst.map((r) => r.status))].filter((s) => ![200, 429, 503].includes(s)), []);
    t.ok(burst.filter((r) => r.status === 503).every((r) => r.headers['retry-after'] === '1'), 'every 503 says Retry-After: 1');
  });
});

// One gateway from its start to its stop: its stderr is read whole, from the ready line on,
// and it is stopped by SIGTERM once, at the end; the token must be in none of what it left.
t.test('one gateway from start to SIGTERM', async (t) => {
  const { gw, sb } = await gateway(t);

  t.test('stderr carries only our own lines, from start to stop and on a failed start; modern answers are plain JSON', async (t) => {
    t.equal(gw.stderr(), `shadowcode: gateway ready at ${gw.url} for ${sb.project} (read-only)\n`, 'the ready line and nothing before it');
    const types: string[] = [];
    const recording = async (url: any, init: any) => {
      const r = await fetch(url, init);
      types.push(r.headers.get('content-type') ?? '');
      return r;
    };
    const c = new Client({ name: 'json-check', version: '1' }, { versionNegotiation: { mode: 'auto' } as never });
    await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: auth() }, fetch: recording as never }));
    await c.listTools();
    await c.callTool({ name: 'shadow_status', arguments: {} });
    await c.close();
    t.ok(types.length >= 2 && types.every((x) => x.startsWith('application/json')), `every modern answer is application/json (${types.join(', ')})`);
    const busy = await spawnCli(sb, ['--project', sb.project, 'mcp', 'serve', '--http', `127.0.0.1:${gw.port}`, '--token-env', 'T'], '', { T: TOKEN });
    t.equal(busy.code, 1);
    t.equal(busy.stderr, `shadowcode: cannot listen on 127.0.0.1:${gw.port}: EADDRINUSE [SC_HTTP_LISTEN_FAILED]\n`, 'a failed start prints its reason only');
  });

  let results = '';
  // The token goes out in tool calls, in a query and with a wrong header; the next tests look for it in what stays.
  t.test('the token is used for tool calls, and refused in the query or altered', async (t) => {
    const c = await httpClient(gw.url, 'v2-modern');
    results = JSON.stringify([await c.callTool({ name: 'shadow_status', arguments: {} }), await c.callTool({ name: 'shadow_doctor', arguments: {} }), await c.callTool({ name: 'shadow_tools', arguments: {} })]);
    await c.close();
    t.equal((await raw(gw.port, { path: `/mcp?token=${TOKEN}`, headers: JSON_HEADERS, body: INIT_BODY })).status, 400);
    t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth(`${TOKEN}x`) }, body: INIT_BODY })).status, 401);
  });

  t.test('SIGTERM stops the gateway cleanly with exit 0; end of stdin does not', async (t) => {
    gw.child.stdin.end();
    await new Promise((r) => setTimeout(r, 300));
    t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY })).status, 200, 'still serving after stdin EOF');
    t.equal(await gw.stop(), 0);
    t.match(gw.stderr(), /SIGTERM: stopping the gateway\nshadowcode: gateway stopped\n$/);
    for (const line of gw.stderr().split('\n').filter(Boolean)) t.match(line, /^shadowcode: /, line);
    t.notMatch(gw.stderr(), /responseMode|drops mid-call/);
  });

  t.test('the token never reaches stderr, stdout, audit rows or tool results', async (t) => {
    t.ok(results.length > 0, 'the tool results were taken');
    t.notMatch(results, TOKEN);
    t.notMatch(gw.stderr() + gw.stdout(), TOKEN);
    t.equal(gw.stdout(), '', 'stdout stays empty');
    for (const f of readdirSync(sb.profile)) t.notMatch(readFileSync(join(sb.profile, f)).toString('latin1'), TOKEN.slice(0, 24), `${f} holds no part of the token`);
    const audit = JSON.parse((await cli(sb, ['--json', 'audit', 'verify'])).stdout);
    t.equal(audit.ok, true);
  });
});

t.test('start-up refusals: non-loopback binds, bad tokens, proxy host shapes', async (t) => {
  const sb = sandbox();
  const argv = (args: string[]) => ['--project', sb.project, 'mcp', 'serve', ...args];
  // Each is refused before anything listens, so the CLI in this process gives the same code, stdout
  // and stderr as a process would; one bind refusal is still a real process, as a user sees it exit.
  const binds = ['0.0.0.0:0', '[::]:0', 'localhost:0', '192.168.0.10:0'];
  const [first, ...others] = binds;
  const real = spawnCli(sb, argv(['--http', first as string, '--token-env', 'T']), '', { T: 'a'.repeat(40) });
  // `mcp serve` points console.log at stderr before it reads --http (a server's stdout is protocol
  // only); in this process that would outlive the refusals.
  const { log, info } = console;
  t.teardown(() => Object.assign(console, { log, info }));
  const run = (args: string[], env: NodeJS.ProcessEnv = { T: 'a'.repeat(40) }) => cli({ ...sb, env: { ...sb.env, ...env } }, argv(args));
  const inProcess = [];
  for (const bind of others) inProcess.push(await run(['--http', bind, '--token-env', 'T']));
  const short = await run(['--http', '127.0.0.1:0', '--token-env', 'T'], { T: 'too-short' });
  const unset = await run(['--http', '127.0.0.1:0', '--token-env', 'UNSET_NAME'], {});
  const noToken = await run(['--http', '127.0.0.1:0']);
  const noHttp = await run(['--token-env', 'T']);
  const wildcard = await run(['--http', '127.0.0.1:0', '--token-env', 'T', '--allowed-host', '*.example.com']);
  const json = await run(['--json', '--http', '127.0.0.1:0', '--token-env', 'T']);
  const byBind = [await real, ...inProcess];
  binds.forEach((bind, i) => {
    t.equal(byBind[i]?.code, 2, bind);
    t.match(byBind[i]?.stderr, /\[SC_HTTP_BIND_INVALID\]/, bind);
  });
  t.match(short.stderr, /must be 32-512 bearer-token characters.*\[SC_HTTP_TOKEN_INVALID\]/);
  t.equal(short.code, 2, 'a short token is a bad value');
  t.notMatch(short.stderr, /too-short/, 'the bad token is not echoed');
  t.match(unset.stderr, /neither set in the environment nor stored/);
  t.match(noToken.stderr, /--http needs --token-env/);
  t.match(noHttp.stderr, /go with --http/);
  t.match(wildcard.stderr, /\[SC_HTTP_HOST_INVALID\]/);
  t.match(json.stdout, /cannot be combined with --json/);
});

t.test('the token may come from the profile secret store', async (t) => {
  const { gw } = readOnly;
  t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY })).status, 200);
});

t.test('mcp register --url output connects to the running gateway for each client', async (t) => {
  const { gw, sb } = readOnly;
  const clientEnv: Record<string, string> = { SHADOW_MCP_HTTP_TOKEN: TOKEN };
  for (const client of ['codex', 'claude', 'cursor'] as const) {
    const r = await cli(sb, ['mcp', 'register', '--client', client, '--url', gw.url, '--token-env', 'SHADOW_MCP_HTTP_TOKEN']);
    let url: string;
    let authorization: string;
    if (client === 'codex') {
      const { parse } = await import('smol-toml');
      const e = (parse(r.stdout) as any).mcp_servers.shadowcode;
      url = e.url;
      authorization = `Bearer ${clientEnv[e.bearer_token_env_var]}`; // what Codex sends
    } else {
      const e = JSON.parse(r.stdout).mcpServers.shadowcode;
      url = e.url;
      // Expand the placeholder as that client does, from the client's own environment.
      authorization = e.headers.Authorization.replace(/\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}/g, (_: string, n: string) => clientEnv[n] ?? '');
    }
    t.notMatch(r.stdout, TOKEN, 'the registration does not contain the token');
    const c = await httpClient(url, 'v2-modern', { authorization });
    t.equal((await c.listTools()).tools.length, 17, client);
    await c.close();
  }
});
