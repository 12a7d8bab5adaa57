// bench/report.mjs renders docs/performance.md from bench/results/, which a fresh clone does not have.
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
