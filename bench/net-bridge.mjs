// What reaching only granted hosts costs: a sandboxed start with one granted host (the proxy
// outside, the bridge inside) against one with no network, and a request through the proxy
// against a direct one (bench/net-bridge-bench.ts, bundled with esbuild). Only starts whose
// network is a list of hosts pay either. Writes bench/results/net-bridge.json with the load
// average: on a shared machine, compare runs only at a low load. Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, loadBench, spread } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'net-bridge-bench');
const quick = process.argv.includes('--quick');
const r = await run(quick ? { rounds: 2, calls: 5, requests: 50 } : {});
const summary = {
  rounds: r.rounds,
  calls_per_round: r.calls_per_round,
  requests_per_round: r.requests_per_round,
  node: process.versions.node,
  cpus: cpus().length,
  start_ms: { no_network: spread(r.plain), granted_hosts: spread(r.hosts), added: spread(r.hosts.map((x, i) => x - r.plain[i])) },
  request_ms: { direct: spread(r.direct_request), through_proxy: spread(r.proxied_request), added: spread(r.proxied_request.map((x, i) => x - r.direct_request[i])) },
  load_average: loadavg().map((x) => Math.round(x * 100) / 100),
};
console.log(`sandboxed start to exit, ms, median (min–max) of ${r.rounds} round medians, ${r.calls_per_round} starts each:`);
console.log(`  no network      ${fs(summary.start_ms.no_network)}`);
console.log(`  granted hosts   ${fs(summary.start_ms.granted_hosts)}  (proxy outside, bridge inside)`);
console.log(`  added           ${fs(summary.start_ms.added)}`);
console.log(`one plain-http request to loopback, ms, median of ${r.requests_per_round} per round:`);
console.log(`  direct          ${fs(summary.request_ms.direct)}`);
console.log(`  through proxy   ${fs(summary.request_ms.through_proxy)}  (a gate decision and its audit row each)`);
console.log(`  added           ${fs(summary.request_ms.added)}`);
console.log(`  load average ${summary.load_average.join(' ')}`);
writeFileSync(join(out, 'net-bridge.json'), `${JSON.stringify(summary, null, 2)}\n`);
