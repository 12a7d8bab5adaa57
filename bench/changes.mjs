// The change watch's cost per approved command (bench/changes-bench.ts, bundled with
// esbuild): the baseline a task pays once, and what each approved command adds (three
// looks at the project: before the approval, after it, after the command). Writes
// bench/results/changes.json with the load average at the end: on a shared machine,
// compare runs only at a low load. Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { f2, loadBench } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'changes-bench');
const quick = process.argv.includes('--quick');
const rows = await run(quick ? { sizes: [200, 2000], looks: 3 } : {});
const summary = { node: process.versions.node, cpus: cpus().length, sizes: rows, load_average: loadavg().map((x) => Math.round(x * 100) / 100) };
console.log('change watch, ms (median of the looks), 2 KiB files:');
console.log('  files   baseline (once a task)   look, nothing changed   look, 10 changed   per approved command   store for the baseline');
for (const r of rows) {
  console.log(`  ${String(r.files).padStart(5)}   ${f2(r.open_ms).padStart(10)}               ${f2(r.look_ms).padStart(8)}                ${f2(r.changed_ms).padStart(8)}            ${f2(r.command_ms).padStart(8)}             ${(r.store_bytes / 1048576).toFixed(1)} MiB`);
}
console.log(`  load average ${summary.load_average.join(' ')}`);
writeFileSync(join(out, 'changes.json'), `${JSON.stringify(summary, null, 2)}\n`);
