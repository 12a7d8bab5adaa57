// OpenTelemetry's cost on `mcp serve` (stdio), over BENCH_ROUNDS rounds whose order alternates:
//   cold start (spawn → initialize → tools/list answered) and the shadow_status round trip for
//   off             nothing configured (what every user without a collector runs)
//   before, before port closed
//                   BENCH_BEFORE=DIR: another checkout's built server, e.g. this branch's base
//                   (git archive BASE | tar -x -C DIR, link node_modules, node scripts/build.mjs),
//                   off and with the collector's port closed
//   port closed     OTEL_EXPORTER_OTLP_ENDPOINT at a loopback port nothing listens on
//   never answers   a collector that accepts every request and never answers
//   live            a collector that answers every export at once
// Writes bench/results/telemetry.json. Not a test.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, median, ordered, spread } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const STARTS = Number(process.env.BENCH_STARTS ?? 6);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const work = mkdtempSync(join(tmpdir(), 'sc-bench-otel-'));
mkdirSync(join(work, 'project'));
const base = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile') };

async function collector(answer) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer && res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => (server.closeAllConnections(), server.close()) };
}
const closedPort = await (async () => {
  const c = await collector(true);
  c.close();
  return c.url;
})();
const hung = await collector(false);
const live = await collector(true);

const serve = (bin) => [bin, '--project', join(work, 'project'), 'mcp', 'serve'];
const ours = join(root, 'bin', 'shadowcode.js');
const variants = {
  off: { args: serve(ours), env: base },
  'port closed': { args: serve(ours), env: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: closedPort } },
  'never answers': { args: serve(ours), env: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: hung.url } },
  live: { args: serve(ours), env: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: live.url } },
};
if (process.env.BENCH_BEFORE) {
  variants.before = { args: serve(join(process.env.BENCH_BEFORE, 'bin', 'shadowcode.js')), env: base };
  variants['before port closed'] = { args: serve(join(process.env.BENCH_BEFORE, 'bin', 'shadowcode.js')), env: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: closedPort } };
}

function start({ args, env }) {
  const child = spawn(process.execPath, args, { cwd: work, env, stdio: ['pipe', 'pipe', 'ignore'] });
  let buf = '';
  const waiting = new Map();
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    }
  });
  // A server that exits before it answers fails the run instead of hanging it.
  child.on('close', (code) => {
    for (const w of waiting.values()) w({ error: { message: `the server exited (${code}) before answering` } });
    waiting.clear();
  });
  let id = 0;
  const request = (method, params) =>
    new Promise((resolve) => {
      const n = ++id;
      waiting.set(n, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
    });
  const notify = (method) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`);
  const stop = () => new Promise((r) => (child.on('close', r), child.stdin.end()));
  return { child, request, notify, stop };
}

async function handshake(s) {
  const init = await s.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  if (init.error) throw new Error(init.error.message);
  s.notify('notifications/initialized');
  return s.request('tools/list', {});
}
const pace = () => new Promise((r) => setTimeout(r, 10));

for (const v of Object.values(variants)) {
  const s = start(v);
  await handshake(s);
  for (let i = 0; i < 20; i++) await s.request('tools/call', { name: 'shadow_status', arguments: {} });
  await new Promise((r) => setTimeout(r, 2000));
  await s.stop();
}

const rounds = Object.fromEntries(Object.keys(variants).map((n) => [n, { start: [], call: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  const starts = Object.fromEntries(Object.keys(variants).map((n) => [n, []]));
  for (let i = 0; i < STARTS; i++) {
    for (const [name, v] of ordered(Object.entries(variants), round + i)) {
      const t0 = performance.now();
      const s = start(v);
      await handshake(s);
      starts[name].push(performance.now() - t0);
      await s.stop();
    }
  }
  for (const [name, xs] of Object.entries(starts)) rounds[name].start.push(median(xs));
  for (const [name, v] of ordered(Object.entries(variants), round)) {
    const s = start(v);
    await handshake(s);
    for (let i = 0; i < 30; i++) await s.request('tools/call', { name: 'shadow_status', arguments: {} }), await pace();
    const lat = [];
    for (let i = 0; i < CALLS; i++) {
      const t1 = performance.now();
      await s.request('tools/call', { name: 'shadow_status', arguments: {} });
      lat.push(performance.now() - t1);
      await pace();
    }
    rounds[name].call.push(median(lat));
    await s.stop();
  }
  process.stderr.write(`telemetry round ${round + 1}/${ROUNDS} done\n`);
}
hung.close();
live.close();

const summary = { rounds: ROUNDS, starts_per_round: STARTS, calls_per_round: CALLS, node: process.versions.node, start_ms: {}, call_ms: {} };
for (const [name, r] of Object.entries(rounds)) {
  summary.start_ms[name] = spread(r.start);
  summary.call_ms[name] = spread(r.call);
}
console.log(`mcp serve, ms, median (min–max) of ${ROUNDS} round medians:`);
for (const name of Object.keys(rounds)) console.log(`  ${name.padEnd(20)} cold start ${fs(summary.start_ms[name])}   shadow_status round trip ${fs(summary.call_ms[name])}`);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', 'telemetry.json'), `${JSON.stringify(summary, null, 2)}\n`);
