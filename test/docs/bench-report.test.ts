// bench/report.mjs renders the generated blocks of docs/performance.md from bench/results/, which a
// fresh clone does not have, and leaves everything outside their markers as it was written.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '../fixtures/env.js';

t.test('report --write without results says to run the benchmarks first, writes nothing and shows no stack trace', async (t) => {
  // A clone's layout without bench/results/, as after git clone.
  const clone = mkdtempSync(join(tmpdir(), 'sc-bench-'));
  mkdirSync(join(clone, 'bench'));
  mkdirSync(join(clone, 'docs'));
  copyFileSync(join(ROOT, 'bench', 'report.mjs'), join(clone, 'bench', 'report.mjs'));
  writeFileSync(join(clone, 'docs', 'performance.md'), 'the page as committed\n');
  const r = spawnSync(process.execPath, [join(clone, 'bench', 'report.mjs'), '--write'], { encoding: 'utf8' });
  t.equal(r.status, 1);
  t.match(r.stderr, /^bench\/report\.mjs: bench\/results\/ holds no results\. .*run `npm run bench` first.*Nothing was written\.\n$/);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  t.equal(readFileSync(join(clone, 'docs', 'performance.md'), 'utf8'), 'the page as committed\n');
  mkdirSync(join(clone, 'bench', 'results'));
  writeFileSync(join(clone, 'bench', 'results', 'stdio.json'), '{"half');
  const broken = spawnSync(process.execPath, [join(clone, 'bench', 'report.mjs')], { encoding: 'utf8' });
  t.equal(broken.status, 1);
  t.match(broken.stderr, /^bench\/report\.mjs: bench\/results\/stdio\.json is not a result file/);
});

/** The page with its generated blocks emptied: what --write must leave exactly as it was. */
const outsideBlocks = (page: string) => page.replace(/(<!-- begin generated ([\w-]+): [^\n]*-->)[\s\S]*?(\n<!-- end generated \2 -->)/g, '$1$3');
const block = (page: string, name: string) => new RegExp(`<!-- begin generated ${name}: [^\\n]*-->\\n([\\s\\S]*?)\\n<!-- end generated ${name} -->`).exec(page)?.[1];

/** A clone's layout with the committed page, hand-written text added outside the markers, and one result file. */
function cloneWithResults(): { clone: string; page: string } {
  const clone = mkdtempSync(join(tmpdir(), 'sc-bench-'));
  mkdirSync(join(clone, 'bench', 'results'), { recursive: true });
  mkdirSync(join(clone, 'docs'));
  copyFileSync(join(ROOT, 'bench', 'report.mjs'), join(clone, 'bench', 'report.mjs'));
  const committed = readFileSync(join(ROOT, 'docs', 'performance.md'), 'utf8');
  const page = committed.replace('\n## Measured on a busy machine', '\nA note written by hand between the tables and the next section.\n\n## Measured on a busy machine') + '\n## Written by hand at the end\n\nkept across --write\n';
  writeFileSync(join(clone, 'docs', 'performance.md'), page);
  // One result file: the agent bench; the rest of this run was not measured.
  const fmt = (step: number) => ({ steps: 200, step_ms_median: step, step_ms_p90: step + 0.11, first_request_ms_median: 3.21, first_request_ms_p90: 4.32 });
  writeFileSync(join(clone, 'bench', 'results', 'agent.json'), JSON.stringify({ openai: fmt(0.42), anthropic: fmt(0.47) }));
  return { clone, page };
}

t.test('report --write rewrites only the generated blocks: text written by hand outside the markers stays', async (t) => {
  const { clone, page } = cloneWithResults();
  const printed = spawnSync(process.execPath, [join(clone, 'bench', 'report.mjs')], { encoding: 'utf8' });
  t.equal(printed.status, 0, printed.stderr);
  t.equal(readFileSync(join(clone, 'docs', 'performance.md'), 'utf8'), page, 'without --write the page is printed, not written');
  const r = spawnSync(process.execPath, [join(clone, 'bench', 'report.mjs'), '--write'], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const after = readFileSync(join(clone, 'docs', 'performance.md'), 'utf8');
  t.equal(after, printed.stdout, 'it writes the page it prints');
  t.equal(outsideBlocks(after), outsideBlocks(page), 'every line outside the markers, the markers included, is as it was');
  t.match(after, 'A note written by hand between the tables and the next section.');
  t.match(after, /\n## Written by hand at the end\n\nkept across --write\n$/);
  t.match(after, '## Measured on a busy machine: CPU, instructions, system calls', "the committed page's own sections written by hand stay");
  const wall = block(after, 'wall-clock') as string;
  t.not(wall, block(page, 'wall-clock'), 'the wall-clock block is replaced');
  t.match(wall, /\| cold start to the first `tools\/list` answer, from the checkout \(ms\) \| — \| — \| — \|/, 'with this run: not measured');
  t.match(wall, /\n\nThe wall-clock cells above are "—" until `npm run bench` runs on an idle machine/);
  const agent = block(after, 'agent') as string;
  t.match(agent, '| OpenAI-compatible | 0.42 / 0.53 ms | 3.21 / 4.32 ms |', "the agent block has this run's numbers");
  t.match(agent, '| Anthropic | 0.47 / 0.58 ms | 3.21 / 4.32 ms |');
  t.match(agent, /^Both are under their targets/m);
});

t.test('report --write with a marker missing says which, writes nothing and shows no stack trace', async (t) => {
  const { clone, page } = cloneWithResults();
  const broken = page.replace('\n<!-- end generated agent -->', '');
  t.not(broken, page);
  writeFileSync(join(clone, 'docs', 'performance.md'), broken);
  const r = spawnSync(process.execPath, [join(clone, 'bench', 'report.mjs'), '--write'], { encoding: 'utf8' });
  t.equal(r.status, 1);
  t.match(r.stderr, /^bench\/report\.mjs: docs\/performance\.md has no marker line "<!-- end generated agent -->".*Nothing was written\.\n$/);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  t.equal(readFileSync(join(clone, 'docs', 'performance.md'), 'utf8'), broken, 'the page is untouched');
});
