// The agent runtime's own cost against the fake model (bench/agent-bench.ts,
// bundled here with esbuild so it runs on plain Node): per step, from a model
// answer to the next model request with tool time excluded, and shadow_run to
// the first model request. Targets: under 2 ms and under 20 ms.
// Writes bench/results/agent.json. Not a test: no assertions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBench } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'bench', 'results');
mkdirSync(out, { recursive: true });
const { run } = await loadBench(root, 'agent-bench');
const results = await run();
console.log('agent runtime (median / p90, ms)');
console.log('| format | per step | shadow_run to first model request |');
console.log('| --- | --- | --- |');
for (const [format, r] of Object.entries(results)) console.log(`| ${format} | ${r.step_ms_median.toFixed(2)} / ${r.step_ms_p90.toFixed(2)} (${r.steps} steps) | ${r.first_request_ms_median.toFixed(2)} / ${r.first_request_ms_p90.toFixed(2)} |`);
writeFileSync(join(out, 'agent.json'), JSON.stringify({ node: process.version, ...results }, null, 2));
// Run on its own, the engines' leftover handles would keep it alive; bench/run.mjs exits itself.
if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(0);
