// The outbound client's overhead per tool call: an approved relay call (gate
// 'mcp:call' + McpConnection.call; the approval wait is excluded) against the bare
// SDK v2 Client calling the same server-everything over stdio (bench/client-bench.ts,
// bundled here with esbuild so it runs on plain Node). Target: ≤ 1.2× the direct call.
// Writes bench/results/client.json. Not a test: no assertions; `npm run build` first
// (the relay's stdio transport starts dist/supervisor.cjs).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, loadBench, spread } from './lib.mjs';

const TARGET = 1.2;
const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'client-bench');
const r = await run();
const summary = {
  rounds: r.rounds,
  calls_per_round: r.calls_per_round,
  node: process.versions.node,
  cpus: cpus().length,
  target: TARGET,
  call_ms: { relay: spread(r.relay), direct: spread(r.direct), ratio: spread(r.relay.map((x, i) => x / r.direct[i])) },
  // The client process's own CPU per call while each path's call was in flight (holds on a busy machine).
  cpu_us: { relay: spread(r.relay_cpu_us), direct: spread(r.direct_cpu_us), ratio: spread(r.relay_cpu_us.map((x, i) => x / r.direct_cpu_us[i])) },
};
const met = summary.call_ms.ratio.median <= TARGET;
console.log(`echo call over stdio, ms, median (min–max) of ${r.rounds} round medians, ${r.calls_per_round} calls each:`);
console.log(`  relay (gate + McpConnection)  ${fs(summary.call_ms.relay)}`);
console.log(`  direct (SDK v2 Client)        ${fs(summary.call_ms.direct)}`);
console.log(`  ratio ${fs(summary.call_ms.ratio)}x  target ≤ ${TARGET}x  ${met ? 'PASS' : 'FAIL'}`);
const f0 = (x) => x.toFixed(0);
console.log(`client CPU per call, µs: relay ${fs(summary.cpu_us.relay, f0)}, direct ${fs(summary.cpu_us.direct, f0)}, ratio ${fs(summary.cpu_us.ratio)}x`);
writeFileSync(join(out, 'client.json'), `${JSON.stringify(summary, null, 2)}\n`);
