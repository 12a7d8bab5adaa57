// Parsing throughput of model answer streams (bench/stream-bench.ts, bundled
// with esbuild): hostile shapes (one huge line in 1 KiB pieces, hundreds of
// thousands of tool-call ids) next to ordinary ones. Linear parsing keeps the
// MB/s of a shape flat as it grows four-fold. Writes bench/results/stream.json.
// Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBench } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'stream-bench');
const rows = await run();
console.log('model stream parsing (CPU-seconds, MB/s)');
console.log('| shape | bytes | piece | CPU-s | MB/s |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.shape} | ${r.bytes} | ${r.piece} | ${r.cpu_s.toFixed(3)} | ${r.mb_per_s.toFixed(1)} |`);
writeFileSync(join(out, 'stream.json'), JSON.stringify({ node: process.version, rows }, null, 2));
