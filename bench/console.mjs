// The console's live feed: time from a job event written to the store to its step on the
// page, in headless Chromium (bench/console-bench.ts, bundled here with esbuild). Target:
// 100 ms or less. Writes bench/results/console.json. Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fs, loadBench, spread } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'console-bench', ['playwright-core']);
const r = await run();
const s = spread(r.ms);
const p90 = [...r.ms].sort((a, b) => a - b)[Math.floor(r.ms.length * 0.9)];
console.log(`console: job event to page, ms (median (min–max)), feed read every ${r.poll_ms} ms`);
console.log(`| rounds | event to page | p90 | target |`);
console.log('| --- | --- | --- | --- |');
console.log(`| ${r.ms.length} | ${fs(s, (x) => x.toFixed(0))} | ${p90} | ≤ 100 |`);
console.log(`console: an open page while nothing happens, ${r.idle.jobs} jobs in the store: ${r.idle.cpu_ms_per_s.toFixed(1)} CPU-ms per second`);
writeFileSync(join(out, 'console.json'), JSON.stringify({ node: process.version, poll_ms: r.poll_ms, ...s, p90, rounds: r.ms, idle: r.idle }, null, 2));
if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(0);
