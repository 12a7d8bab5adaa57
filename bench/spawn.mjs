// The sandbox's cost per process start: `true` started bare against the same command
// in the bwrap sandbox the spawn point builds (bench/spawn-bench.ts, bundled with
// esbuild). Target: ≤ 15 ms added per start. Writes bench/results/spawn.json with the
// load average at the end: on a shared machine, compare runs only at a low load.
// Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, loadBench, spread } from './lib.mjs';

const TARGET_MS = 15;
const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'spawn-bench');
const quick = process.argv.includes('--quick');
const r = await run(quick ? { rounds: 2, calls: 5 } : {});
const summary = {
  rounds: r.rounds,
  calls_per_round: r.calls_per_round,
  node: process.versions.node,
  cpus: cpus().length,
  target_added_ms: TARGET_MS,
  start_ms: { bare: spread(r.bare), sandboxed: spread(r.sandboxed), added: spread(r.sandboxed.map((x, i) => x - r.bare[i])) },
  // bwrap with every namespace and only /usr, /proc and /dev: what any bwrap sandbox adds on this machine.
  floor_ms: { start: spread(r.floor), added: spread(r.floor.map((x, i) => x - r.bare[i])) },
  // An approved command as a user waits for it: the supervisor, the spawn row and the sandbox (or none), to its result.
  supervised_ms: { bare: spread(r.supervised_bare), sandboxed: spread(r.supervised_sandboxed), added: spread(r.supervised_added) },
  // The spawn point's own work per sandboxed start (placeholders, command line), without bwrap.
  own_us: Math.round(r.own_us),
  // The same in a project of about 800 entries (scanned for nested protected paths), and the scan after the exit.
  own_tree_us: Math.round(r.own_tree_us),
  after_tree_us: Math.round(r.after_tree_us),
  // Giving the placeholders back once the process has exited (not part of the start; with the shipped linger, only the claim count and the report file).
  teardown_ms: spread(r.teardown),
  load_average: loadavg().map((x) => Math.round(x * 100) / 100),
};
const met = summary.start_ms.added.median <= TARGET_MS;
console.log(`process start to exit, ms, median (min–max) of ${r.rounds} round medians, ${r.calls_per_round} starts each:`);
console.log(`  bare        ${fs(summary.start_ms.bare)}`);
console.log(`  sandboxed   ${fs(summary.start_ms.sandboxed)}`);
console.log(`  added       ${fs(summary.start_ms.added)}  target ≤ ${TARGET_MS} ms  ${met ? 'PASS' : 'FAIL'}`);
console.log(`  of which any bwrap sandbox (every namespace, only /usr, /proc and /dev): ${fs(summary.floor_ms.added)}`);
console.log(`as an approved command runs (spawn row, then bwrap, or without a sandbox the node supervisor), call to result, ms:`);
console.log(`  bare        ${fs(summary.supervised_ms.bare)}`);
console.log(`  sandboxed   ${fs(summary.supervised_ms.sandboxed)}`);
console.log(`  added       ${fs(summary.supervised_ms.added)}`);
console.log(`  of which the spawn point's own work: ${summary.own_us} µs (an empty project), ${summary.own_tree_us} µs (800 entries)`);
console.log(`  after the exit, what the process created among protected paths: ${summary.after_tree_us} µs (800 entries)`);
console.log(`  teardown    ${fs(summary.teardown_ms)}  after the exit: the placeholders removed`);
console.log(`  load average ${summary.load_average.join(' ')}`);
writeFileSync(join(out, 'spawn.json'), `${JSON.stringify(summary, null, 2)}\n`);
