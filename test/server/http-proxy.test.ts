// Behind a TLS reverse proxy on the same machine: --allowed-host. The proxy is
// real (node:https with a certificate made here), and forwards Host unchanged.
import { request as httpRequest } from 'node:http';
import { createServer as createHttps, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import forge from 'node-forge';
import t from 'tap';
import { cli, sandbox } from '../fixtures/env.js';
import { auth, INIT_BODY, JSON_HEADERS, raw, startGateway, TOKEN } from '../fixtures/http.js';

function certificate(name: string): { key: string; cert: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60000);
  cert.validity.notAfter = new Date(Date.now() + 3600000);
  const attrs = [{ name: 'commonName', value: name }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { key: forge.pki.privateKeyToPem(keys.privateKey), cert: forge.pki.certificateToPem(cert) };
}

/** The JSON-RPC message of a response, whether it came as JSON or as one SSE event (the SDK's legacy leg streams). */
function message(body: string): any {
  const data = /^data: (.*)$/m.exec(body);
  return JSON.parse(data ? (data[1] as string) : body);
}

// One certificate for every proxy in this file: making an RSA key is a third of a CPU-second.
let tls: { key: string; cert: string };

async function setup(t: any, allowed: string) {
  tls ??= certificate('mcp.example.com');
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const gw = await startGateway(sb, ['--allowed-host', allowed]);
  const proxy = createHttps(tls, (req, res) => {
    // Like an nginx location with proxy_set_header Host $host: the Host header is kept.
    const up = httpRequest({ host: '127.0.0.1', port: gw.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    proxy.close();
    await gw.stop();
  });
  const port = (proxy.address() as AddressInfo).port;
  const via = (headers: Record<string, string>, body = INIT_BODY) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port, servername: 'mcp.example.com', ca: tls.cert, method: 'POST', path: '/mcp', headers: { ...JSON_HEADERS, ...headers } }, (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
      });
      req.on('error', reject);
      req.end(body);
    });
  return { gw, via };
}

// One gateway and proxy for mcp.example.com, started once, for the tests that only send it
// requests: each request is answered on its own (no session, no state a request leaves behind),
// and all of them together stay far below the rate limit.
let example: Awaited<ReturnType<typeof setup>>;
t.before(async () => {
  example = await setup(t, 'mcp.example.com');
});

t.test('a request through the proxy with the allowed Host and the token is served', async (t) => {
  const { via } = example;
  const r = await via({ host: 'mcp.example.com', ...auth() });
  t.equal(r.status, 200);
  t.match(message(r.body), { result: { serverInfo: { name: 'shadowcode' } } });
  const list = await via({ host: 'mcp.example.com:443', ...auth() }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }));
  t.equal(message(list.body).result.tools.length, 17, 'the explicit default port is the same host');
});

t.test('with proxy hosts, the token stays mandatory and only those hosts are accepted', async (t) => {
  const { via, gw } = example;
  t.equal((await via({ host: 'mcp.example.com' })).status, 401, 'read-only still needs the token');
  t.equal((await via({ host: 'other.example.com', ...auth() })).status, 403);
  t.equal((await raw(gw.port, { headers: { ...JSON_HEADERS, ...auth() }, body: INIT_BODY })).status, 403, 'the loopback Host is no longer accepted');
});

t.test('only the exact matching https Origin is accepted, default port normalised', async (t) => {
  const { via } = example;
  const h = { host: 'mcp.example.com', ...auth() };
  t.equal((await via({ ...h, origin: 'https://mcp.example.com' })).status, 200);
  t.equal((await via({ ...h, origin: 'https://mcp.example.com:443' })).status, 200);
  for (const origin of ['http://mcp.example.com', 'https://evil.example.com', 'https://mcp.example.com:8443', 'https://mcp.example.com.evil.net', 'null']) {
    t.equal((await via({ ...h, origin })).status, 403, origin);
  }
});

t.test('a non-default proxy port is part of both Host and Origin', async (t) => {
  const { via } = await setup(t, 'mcp.example.com:8443');
  t.equal((await via({ host: 'mcp.example.com:8443', origin: 'https://mcp.example.com:8443', ...auth() })).status, 200);
  t.equal((await via({ host: 'mcp.example.com', ...auth() })).status, 403);
  t.equal((await via({ host: 'mcp.example.com:8443', origin: 'https://mcp.example.com', ...auth() })).status, 403);
  t.notMatch(TOKEN, /^$/);
});
