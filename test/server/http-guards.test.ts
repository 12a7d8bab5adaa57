import t from 'tap';
import { loopbackOrigins, parseAllowedHost, parseBind, proxyAllowances, resolveToken } from '../../src/server/http-config.js';
import { checkBearer, checkBody, checkHeaders, checkHost, checkMethod, checkOrigin, checkTarget, digest, forwardableHeaders, normalOrigin } from '../../src/server/http-guards.js';

const cfg = { hosts: new Set(['127.0.0.1:8765', 'localhost:8765']), origins: new Set<string>(), tokenDigest: digest('x'.repeat(40)) };

t.test('Host must be the bound IP or localhost with the real port', async (t) => {
  t.equal(checkHost({ host: '127.0.0.1:8765' }, cfg), null);
  t.equal(checkHost({ host: 'LOCALHOST:8765' }, cfg), null);
  for (const host of ['evil.example:8765', '127.0.0.1:8766', 'localhost', '127.0.0.2:8765', '[::1]:8765', '', undefined]) {
    t.same(checkHost({ host }, cfg), { status: 403, reason: 'host not allowed' }, String(host));
  }
});

t.test("only the gateway's own origin, normalised, is accepted", async (t) => {
  const own = { ...cfg, origins: new Set(loopbackOrigins({ host: '127.0.0.1', port: 0 }, 8765)) };
  t.same([...own.origins], ['http://127.0.0.1:8765', 'http://localhost:8765']);
  t.same(loopbackOrigins({ host: '::1', port: 0 }, 80), ['http://[::1]', 'http://localhost'], 'the default port is dropped');
  t.equal(checkOrigin({}, own), null, 'no Origin: not a browser');
  for (const origin of ['http://127.0.0.1:8765', 'http://LOCALHOST:8765']) t.equal(checkOrigin({ origin }, own), null, origin);
  for (const origin of ['http://127.0.0.1:8766', 'https://127.0.0.1:8765', 'http://127.0.0.1:8765/', 'http://127.0.0.1', 'null', 'https://example.com', '', 'http://user@127.0.0.1:8765']) {
    t.equal(checkOrigin({ origin }, own)?.status, 403, origin);
  }
  t.equal(normalOrigin('https://Mcp.Example.com:443'), 'https://mcp.example.com');
  t.equal(normalOrigin('http://h:80'), 'http://h');
  t.equal(normalOrigin('http://h:8080'), 'http://h:8080');
  t.equal(normalOrigin('https://h:80'), 'https://h:80');
});

t.test('a body that is a JSON array is refused as a batch', async (t) => {
  for (const body of ['[]', '  [{"jsonrpc":"2.0"}]', '\r\n\t[1]']) t.match(checkBody(Buffer.from(body)), { status: 400, reason: 'batch' }, JSON.stringify(body));
  t.match(JSON.parse(checkBody(Buffer.from('[]'))!.body!), { jsonrpc: '2.0', id: null, error: { code: -32600 } });
  for (const body of ['{"jsonrpc":"2.0","id":1,"method":"ping"}', '', '  {"a":[1]}', 'x[']) t.equal(checkBody(Buffer.from(body)), null, JSON.stringify(body));
});

t.test('only POST /mcp without a query', async (t) => {
  t.equal(checkTarget('/mcp'), null);
  t.equal(checkTarget('/mcp?x=1')?.status, 400);
  t.equal(checkTarget('/mcp?')?.status, 400);
  t.equal(checkTarget('/other')?.status, 404);
  t.equal(checkTarget('/mcp/')?.status, 404);
  t.equal(checkMethod('POST'), null);
  t.equal(checkMethod('GET')?.status, 405);
  t.equal(checkMethod('DELETE')?.status, 405);
  t.equal(checkMethod('PUT')?.status, 404);
  t.equal(checkMethod('OPTIONS')?.status, 404);
});

t.test('the bearer token must match exactly', async (t) => {
  t.equal(checkBearer({ authorization: `Bearer ${'x'.repeat(40)}` }, cfg), null);
  for (const authorization of [undefined, '', 'Bearer', `Bearer ${'x'.repeat(39)}`, `Bearer ${'x'.repeat(41)}`, `bearer ${'x'.repeat(40)}`, `Basic ${'x'.repeat(40)}`, `Bearer  ${'x'.repeat(40)}`]) {
    t.same(checkBearer({ authorization }, cfg), { status: 401, reason: 'unauthorized' }, String(authorization));
  }
});

t.test('duplicated MCP metadata headers and disagreeing forwarded hosts are refused', async (t) => {
  t.equal(checkHeaders({ 'mcp-method': ['tools/list'] }, 'h'), null);
  for (const name of ['mcp-method', 'mcp-name', 'mcp-protocol-version', 'mcp-session-id', 'authorization', 'mcp-param-x', 'host']) {
    t.equal(checkHeaders({ [name]: ['a', 'b'] }, 'h')?.status, 400, name);
  }
  t.equal(checkHeaders({ accept: ['a', 'b'] }, 'h'), null, 'ordinary headers may repeat');
  t.equal(checkHeaders({ 'x-forwarded-host': ['evil'] }, 'h')?.status, 400);
  t.equal(checkHeaders({ forwarded: ['for=1.2.3.4;host=evil'] }, 'h')?.status, 400);
  t.equal(checkHeaders({ 'x-forwarded-host': ['h'], 'x-forwarded-for': ['1.2.3.4'] }, 'h'), null);
});

t.test('credentials and forwarding hints never reach the MCP handler', async (t) => {
  const h = forwardableHeaders({ authorization: ['Bearer s3cret'], cookie: ['a=b'], 'proxy-authorization': ['x'], 'x-forwarded-for': ['1.2.3.4'], forwarded: ['for=x'], 'mcp-method': ['tools/list'], accept: ['application/json'] });
  t.same([...h.keys()].sort(), ['accept', 'mcp-method']);
});

t.test('only loopback IP binds', async (t) => {
  t.same(parseBind('127.0.0.1:8765'), { host: '127.0.0.1', port: 8765 });
  t.same(parseBind('127.1.2.3:0'), { host: '127.1.2.3', port: 0 });
  t.same(parseBind('[::1]:9000'), { host: '::1', port: 9000 });
  for (const v of ['0.0.0.0:8765', '[::]:8765', 'localhost:8765', '192.168.1.2:8765', '10.0.0.1:80', 'example.com:80', '127.0.0.1', '127.0.0.1:99999', ':8765', '[::ffff:127.0.0.1]:80']) {
    t.throws(() => parseBind(v), { code: 'SC_HTTP_BIND_INVALID' }, v);
  }
});

t.test('allowed proxy hosts: plain names with an optional port, default port normalised', async (t) => {
  t.same(parseAllowedHost('MCP.example.com'), { host: 'mcp.example.com', port: 443 });
  t.same(proxyAllowances(['mcp.example.com', 'b.example.org:8443']), {
    hosts: ['mcp.example.com:443', 'mcp.example.com', 'b.example.org:8443'],
    origins: ['https://mcp.example.com', 'https://b.example.org:8443'],
  });
  for (const v of ['*.example.com', 'example.com/mcp', 'https://example.com', 'user@example.com', 'exa mple.com', '', 'example.com:0', 'example.com:70000']) {
    t.throws(() => parseAllowedHost(v), { code: 'SC_HTTP_HOST_INVALID' }, v);
  }
});

t.test('tokens are 32-512 bearer-token characters, from the environment or the secret store', async (t) => {
  const limits = { min_length: 32, max_length: 512 };
  const good = 'a'.repeat(32);
  t.equal(resolveToken('T', { T: good }, () => undefined, limits), good);
  t.equal(resolveToken('T', {}, (n) => (n === 'T' ? `${good}==` : undefined), limits), `${good}==`);
  t.equal(resolveToken('T', { T: good }, () => 'b'.repeat(40), limits), good, 'the environment comes first');
  for (const [env, why] of [[{}, /neither set/], [{ T: 'a'.repeat(31) }, /32-512/], [{ T: 'a'.repeat(513) }, /32-512/], [{ T: `${'a'.repeat(32)} x` }, /32-512/], [{ T: `${'a'.repeat(32)}=x` }, /32-512/]] as const) {
    t.throws(() => resolveToken('T', env as NodeJS.ProcessEnv, () => undefined, limits), { code: 'SC_HTTP_TOKEN_INVALID', message: why });
  }
  t.throws(() => resolveToken('bad name', {}, () => undefined, limits), { code: 'SC_HTTP_TOKEN_INVALID' });
});
