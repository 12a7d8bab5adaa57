// The report file of one start (src/engine/spawn/discarded.ts): made in the temp folder of the user
// the sandbox runs as, never in whatever folder shadowcode happens to run in.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { reportFile } from '../../../src/engine/spawn/discarded.js';
import { SHARED_TMP } from '../../fixtures/env.js';

t.test('a relative TMPDIR puts the report file in /tmp, not in the folder shadowcode runs in', async (t) => {
  const cwd = mkdtempSync(join(SHARED_TMP, 'sc-report-cwd-'));
  const was = { dir: process.cwd(), tmp: process.env.TMPDIR };
  t.teardown(() => {
    process.chdir(was.dir);
    if (was.tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = was.tmp;
    rmSync(cwd, { recursive: true, force: true });
  });
  process.chdir(cwd);
  for (const rel of ['undefined', 'rel']) {
    process.env.TMPDIR = rel;
    const r = reportFile(undefined);
    t.equal(dirname(r.file), '/tmp', `TMPDIR=${rel}: in /tmp`);
    t.notOk(existsSync(join(cwd, rel)), 'nothing made where shadowcode runs');
    r.remove();
  }
  const abs = mkdtempSync(join(SHARED_TMP, 'sc-report-tmp-'));
  t.teardown(() => rmSync(abs, { recursive: true, force: true }));
  process.env.TMPDIR = abs;
  const r = reportFile(undefined);
  t.equal(dirname(r.file), abs, 'an absolute TMPDIR is used, asked again once it changed');
  r.remove();
});
