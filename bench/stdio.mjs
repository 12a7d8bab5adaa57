// Stdio benchmarks, ours against the bare SDK v2 server in the same run:
//   cold start: spawn → initialize → tools/list answered (median of N runs)
//   round trip: sequential tools/call shadow_status on a warm connection, paced under the frame rate limit
//   idle RSS:   after the first tools/list
// Prints a table and writes bench/results/stdio.json. Not a test: no assertions.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const work = mkdtempSync(join(tmpdir(), 'sc-bench-'));
mkdirSync(join(work, 'project'));
const env = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile') };

const servers = {
  shadowcode: [join(root, 'bin', 'shadowcode.js'), '--workspace', join(work, 'project'), 'mcp', 'serve'],
  'bare SDK v2': [join(root, 'bench', 'bare-stdio-server.mjs')],
};

function start(args) {
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['pipe', 'pipe', 'inherit'] });
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
  await s.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  s.notify('notifications/initialized');
  return s.request('tools/list', {});
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

const results = {};
for (const name of Object.keys(servers)) results[name] = { start: [], call: [], rss: 0 };
// Warm the OS file cache for both before measuring.
for (const args of Object.values(servers)) {
  const s = start(args);
  await handshake(s);
  await s.stop();
}
for (let i = 0; i < RUNS; i++) {
  for (const [name, args] of i % 2 ? Object.entries(servers).reverse() : Object.entries(servers)) {
    const t0 = performance.now();
    const s = start(args);
    await handshake(s);
    results[name].start.push(performance.now() - t0);
    await s.stop();
  }
}
for (const [name, args] of Object.entries(servers)) {
  const s = start(args);
  await handshake(s);
  await new Promise((r) => setTimeout(r, 300));
  results[name].rss = rssMiB(s.child.pid);
  // Calls are paced at 100 per second: the server's 128-frames-per-second limit is part of what is measured against.
  const pace = () => new Promise((r) => setTimeout(r, 10));
  for (let i = 0; i < 50; i++) await s.request('tools/call', { name: 'shadow_status', arguments: {} }), await pace();
  for (let i = 0; i < CALLS; i++) {
    const t1 = performance.now();
    await s.request('tools/call', { name: 'shadow_status', arguments: {} });
    results[name].call.push(performance.now() - t1);
    await pace();
  }
  await s.stop();
}

const ours = results.shadowcode;
const bare = results['bare SDK v2'];
const summary = {
  runs: RUNS,
  calls: CALLS,
  node: process.versions.node,
  start_ms: { shadowcode: median(ours.start), bare: median(bare.start), ratio: median(ours.start) / median(bare.start) },
  call_ms: { shadowcode: median(ours.call), bare: median(bare.call), ratio: median(ours.call) / median(bare.call) },
  idle_rss_mib: { shadowcode: ours.rss, bare: bare.rss },
};
const f = (x) => x.toFixed(2);
console.log(`cold start to tools/list (median of ${RUNS}): shadowcode ${f(summary.start_ms.shadowcode)} ms, bare ${f(summary.start_ms.bare)} ms, ratio ${f(summary.start_ms.ratio)}x`);
console.log(`shadow_status round trip (median of ${CALLS}): shadowcode ${f(summary.call_ms.shadowcode)} ms, bare ${f(summary.call_ms.bare)} ms, ratio ${f(summary.call_ms.ratio)}x`);
console.log(`idle RSS: shadowcode ${f(summary.idle_rss_mib.shadowcode)} MiB, bare ${f(summary.idle_rss_mib.bare)} MiB`);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', 'stdio.json'), `${JSON.stringify(summary, null, 2)}\n`);
