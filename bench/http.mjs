// HTTP benchmarks, ours against the bare SDK v2 handler on node:http in the same
// run: sequential latency of tools/call shadow_status, and throughput with 16
// concurrent callers; the bare servers answer the bytes ours answers. The gateway runs from a copy of the package whose
// policy/limits.json raises the request rate limit, for this benchmark only.
//
// Fair by construction: all servers stay up for the whole run and are measured in
// BENCH_ROUNDS rounds whose order alternates; a second bare server is measured like
// the others, so "bare against itself" shows what is left of order and noise.
// Summary: min/median/max over rounds. Writes bench/results/http.json. Not a test.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, median, ordered, spread } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
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
// The bare servers answer shadow_status with the bytes ours gives (captured below), so a ratio is overhead only.
const env = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile'), T: TOKEN, BENCH_STATUS_FILE: join(work, 'status.json') };

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
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });

const bareArgs = [[join(root, 'bench', 'bare-http-server.mjs')], /bare ready at http:\/\/127\.0\.0\.1:(\d+)/];
const specs = {
  shadowcode: [[join(pkg, 'bin', 'shadowcode.js'), '--project', join(work, 'project'), 'mcp', 'serve', '--http', '127.0.0.1:0', '--token-env', 'T'], /gateway ready at http:\/\/127\.0\.0\.1:(\d+)/],
  'bare SDK v2': bareArgs,
  'bare SDK v2 (control)': bareArgs,
};
const up = {};
for (const [name, [args, ready]] of Object.entries(specs)) {
  up[name] = await start(args, ready);
  // Ours starts first: its answer is written for the bare servers, which start after.
  const answer = await call(up[name].port);
  if (name === 'shadowcode') writeFileSync(env.BENCH_STATUS_FILE, JSON.stringify(JSON.parse(answer).result.structuredContent));
  for (let i = 0; i < 100; i++) await call(up[name].port);
}
const rounds = Object.fromEntries(Object.keys(specs).map((n) => [n, { latency: [], rps: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const name of ordered(Object.keys(specs), round)) {
    const { port } = up[name];
    const lat = [];
    for (let i = 0; i < CALLS; i++) {
      const t = performance.now();
      await call(port);
      lat.push(performance.now() - t);
    }
    rounds[name].latency.push(median(lat));
  }
  for (const name of ordered(Object.keys(specs), round + 1)) {
    const { port } = up[name];
    let done = 0;
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await call(port);
        done++;
      }
    }));
    rounds[name].rps.push(done / SECONDS);
  }
  process.stderr.write(`http round ${round + 1}/${ROUNDS} done\n`);
}
for (const { child } of Object.values(up)) child.kill('SIGTERM');

const ratio = (a, b) => spread(a.map((x, i) => x / b[i]));
const ours = rounds.shadowcode;
const bare = rounds['bare SDK v2'];
const ctl = rounds['bare SDK v2 (control)'];
const summary = {
  rounds: ROUNDS,
  calls_per_round: CALLS,
  seconds_per_round: SECONDS,
  latency_ms: { shadowcode: spread(ours.latency), bare: spread(bare.latency), ratio: ratio(ours.latency, bare.latency), control_ratio: ratio(ctl.latency, bare.latency) },
  rps: { shadowcode: spread(ours.rps), bare: spread(bare.rps), ratio: ratio(ours.rps, bare.rps), control_ratio: ratio(ctl.rps, bare.rps) },
};
console.log(`HTTP shadow_status latency, ms: shadowcode ${fs(summary.latency_ms.shadowcode)}, bare ${fs(summary.latency_ms.bare)}, ratio ${fs(summary.latency_ms.ratio)}x (bare vs bare ${fs(summary.latency_ms.control_ratio)}x)`);
console.log(`HTTP throughput, 16 callers, req/s: shadowcode ${fs(summary.rps.shadowcode)}, bare ${fs(summary.rps.bare)}, ratio ${fs(summary.rps.ratio)}x (bare vs bare ${fs(summary.rps.control_ratio)}x)`);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', 'http.json'), `${JSON.stringify(summary, null, 2)}\n`);
