// HTTP benchmarks, ours against the bare SDK v2 handler on node:http in the same
// run: sequential latency of tools/call shadow_status, and throughput with 16
// concurrent callers. The gateway runs from a copy of the package whose
// policy/limits.json raises the request rate limit, for this benchmark only.
// Writes bench/results/http.json. Not a test: no assertions.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const work = mkdtempSync(join(tmpdir(), 'sc-bench-http-'));
const pkg = join(work, 'pkg');
mkdirSync(pkg);
// Copies, not links, of the code: Node follows links to the real path, which would find the real policy/.
for (const f of ['package.json', 'bin', 'dist', 'policy']) cpSync(join(root, f), join(pkg, f), { recursive: true });
symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'));
const limits = JSON.parse(readFileSync(join(pkg, 'policy', 'limits.json'), 'utf8'));
limits.http_server.requests_per_second = 1000000;
writeFileSync(join(pkg, 'policy', 'limits.json'), JSON.stringify(limits));
mkdirSync(join(work, 'project'));
const TOKEN = 'b'.repeat(64);
const env = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile'), T: TOKEN };

function start(args, ready) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = ready.exec(err);
      if (m) resolve({ child, port: Number(m[1]) });
    });
  });
}

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'shadow_status', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
const headers = (port) => ({
  host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'shadow_status', 'content-length': Buffer.byteLength(body),
});
// Every request gets its own connection, as the gateway's one-request-per-connection rule makes clients do anyway.
const call = (port) =>
  new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: headers(port), agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const servers = {
  shadowcode: [[join(pkg, 'bin', 'shadowcode.js'), '--workspace', join(work, 'project'), 'mcp', 'serve', '--http', '127.0.0.1:0', '--token-env', 'T'], /gateway ready at http:\/\/127\.0\.0\.1:(\d+)/],
  'bare SDK v2': [[join(root, 'bench', 'bare-http-server.mjs')], /bare ready at http:\/\/127\.0\.0\.1:(\d+)/],
};
const out = {};
for (const [name, [args, ready]] of Object.entries(servers)) {
  const { child, port } = await start(args, ready);
  for (let i = 0; i < 100; i++) await call(port);
  const lat = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await call(port);
    lat.push(performance.now() - t);
  }
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (performance.now() < until) {
      await call(port);
      done++;
    }
  }));
  out[name] = { latency_ms: median(lat), rps: done / SECONDS };
  child.kill('SIGTERM');
}
const ours = out.shadowcode;
const bare = out['bare SDK v2'];
const summary = { calls: CALLS, seconds: SECONDS, latency_ms: { shadowcode: ours.latency_ms, bare: bare.latency_ms, ratio: ours.latency_ms / bare.latency_ms }, rps: { shadowcode: ours.rps, bare: bare.rps, ratio: ours.rps / bare.rps } };
const f = (x) => x.toFixed(2);
console.log(`HTTP shadow_status latency (median of ${CALLS}): shadowcode ${f(summary.latency_ms.shadowcode)} ms, bare ${f(summary.latency_ms.bare)} ms, ratio ${f(summary.latency_ms.ratio)}x`);
console.log(`HTTP throughput (16 callers, ${SECONDS} s): shadowcode ${f(summary.rps.shadowcode)} req/s, bare ${f(summary.rps.bare)} req/s, ratio ${f(summary.rps.ratio)}x`);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', 'http.json'), `${JSON.stringify(summary, null, 2)}\n`);
