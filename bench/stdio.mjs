// Stdio benchmarks, ours against the bare SDK v2 server in the same run, over
// BENCH_ROUNDS rounds whose order alternates (so neither server always runs first):
//   cold start: spawn → initialize → tools/list answered; from the checkout and from
//               the package installed out of its own `npm pack` tarball (what hosts launch)
//   round trip: sequential tools/call shadow_status on a warm connection, paced under the frame rate limit;
//               the bare server answers the same bytes as ours (our answer, captured first)
//   idle RSS:   after the first tools/list
// Each round yields one median per server; the summary gives min/median/max over rounds
// of those medians and of their ratios. Writes bench/results/stdio.json. Not a test.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, installPacked, median, ordered, spread } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const STARTS = Number(process.env.BENCH_STARTS ?? 6);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const work = mkdtempSync(join(tmpdir(), 'sc-bench-'));
mkdirSync(join(work, 'project'));
// The bare server answers shadow_status with the bytes ours gives (captured below), so a ratio is overhead only.
const env = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile'), BENCH_STATUS_FILE: join(work, 'status.json') };

const installed = installPacked(root, join(work, 'pack'));
const servers = {
  shadowcode: [join(root, 'bin', 'shadowcode.js'), '--project', join(work, 'project'), 'mcp', 'serve'],
  'shadowcode (installed)': [installed, '--project', join(work, 'project'), 'mcp', 'serve'],
  'bare SDK v2': [join(root, 'bench', 'bare-stdio-server.mjs')],
};
const CALLERS = ['shadowcode', 'bare SDK v2'];

function start(args) {
  const child = spawn(process.execPath, args, { cwd: work, env, stdio: ['pipe', 'pipe', 'inherit'] });
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

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
// Calls are paced at 100 per second: the server's 128-frames-per-second limit is part of what is measured against.
const pace = () => new Promise((r) => setTimeout(r, 10));

// Warm the OS file cache and the code caches (written after a warm-up) before measuring; ours
// goes first, and its shadow_status answer is what the bare server will answer too.
for (const [name, args] of Object.entries(servers)) {
  const s = start(args);
  await handshake(s);
  for (let i = 0; i < 20; i++) {
    const answer = await s.request('tools/call', { name: 'shadow_status', arguments: {} });
    if (name === 'shadowcode' && i === 0) writeFileSync(env.BENCH_STATUS_FILE, JSON.stringify(answer.result.structuredContent));
  }
  await new Promise((r) => setTimeout(r, 2000));
  await s.stop();
}

const rounds = Object.fromEntries(Object.keys(servers).map((n) => [n, { start: [], call: [], rss: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  const starts = Object.fromEntries(Object.keys(servers).map((n) => [n, []]));
  for (let i = 0; i < STARTS; i++) {
    for (const [name, args] of ordered(Object.entries(servers), round + i)) {
      const t0 = performance.now();
      const s = start(args);
      await handshake(s);
      starts[name].push(performance.now() - t0);
      await s.stop();
    }
  }
  for (const [name, xs] of Object.entries(starts)) rounds[name].start.push(median(xs));
  for (const name of ordered(CALLERS, round)) {
    const s = start(servers[name]);
    await handshake(s);
    await new Promise((r) => setTimeout(r, 300));
    rounds[name].rss.push(rssMiB(s.child.pid));
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
  process.stderr.write(`stdio round ${round + 1}/${ROUNDS} done\n`);
}

const ratio = (a, b) => spread(a.map((x, i) => x / b[i]));
const ours = rounds.shadowcode;
const inst = rounds['shadowcode (installed)'];
const bare = rounds['bare SDK v2'];
const summary = {
  rounds: ROUNDS,
  starts_per_round: STARTS,
  calls_per_round: CALLS,
  node: process.versions.node,
  cpus: (await import('node:os')).cpus().length,
  start_ms: { shadowcode: spread(ours.start), installed: spread(inst.start), bare: spread(bare.start), ratio: ratio(ours.start, bare.start), installed_ratio: ratio(inst.start, bare.start) },
  call_ms: { shadowcode: spread(ours.call), bare: spread(bare.call), ratio: ratio(ours.call, bare.call) },
  idle_rss_mib: { shadowcode: spread(ours.rss), bare: spread(bare.rss) },
};
console.log(`cold start to tools/list, ms, median (min–max) of ${ROUNDS} round medians:`);
console.log(`  checkout  ${fs(summary.start_ms.shadowcode)}  ratio ${fs(summary.start_ms.ratio)}x`);
console.log(`  installed ${fs(summary.start_ms.installed)}  ratio ${fs(summary.start_ms.installed_ratio)}x`);
console.log(`  bare      ${fs(summary.start_ms.bare)}`);
console.log(`shadow_status round trip, ms: shadowcode ${fs(summary.call_ms.shadowcode)}, bare ${fs(summary.call_ms.bare)}, ratio ${fs(summary.call_ms.ratio)}x`);
console.log(`idle RSS, MiB: shadowcode ${fs(summary.idle_rss_mib.shadowcode)}, bare ${fs(summary.idle_rss_mib.bare)}`);
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', 'stdio.json'), `${JSON.stringify(summary, null, 2)}\n`);
