// The bounded primitive every read of a project or user-given file goes through,
// fed the hostile files a committer can plant: a FIFO, a /dev/zero link, a link
// out of the project, a directory link, a sparse giant.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { listProjectDir, readProjectFile, readProjectLines, readUserFile, tryReadProjectFile, walkProject } from '../../src/util/safe-read.js';
import { sandbox } from '../fixtures/env.js';

const CAP = 1024;

function hostile() {
  const sb = sandbox('saferead');
  const p = sb.project;
  writeFileSync(join(p, 'ok.json'), '{"a":1}');
  execFileSync('mkfifo', [join(p, 'fifo.json')]);
  symlinkSync('/dev/zero', join(p, 'zero.json'));
  writeFileSync(join(sb.root, 'outside.json'), '{"main":"evil.js"}');
  symlinkSync(join(sb.root, 'outside.json'), join(p, 'out.json'));
  symlinkSync('ok.json', join(p, 'in.json'));
  symlinkSync(sb.root, join(p, 'up'));
  mkdirSync(join(p, 'dir'));
  writeFileSync(join(p, 'giant.json'), '');
  truncateSync(join(p, 'giant.json'), 1024 ** 3); // 1 GiB, sparse: costs nothing on disk
  return sb;
}

const code = (fn: () => unknown) => {
  try {
    fn();
    return 'read';
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

t.test('reads a regular file inside the project, within its cap', async (t) => {
  const sb = hostile();
  const r = readProjectFile(sb.project, 'ok.json', { cap: CAP, kind: 'manifest' });
  t.equal(r.bytes.toString(), '{"a":1}');
  t.equal(r.size, 7);
  t.equal(r.truncated, false);
  t.equal(r.path, join(sb.project, 'ok.json'));
  t.equal(readProjectFile(sb.project, 'in.json', { cap: CAP, kind: 'manifest' }).bytes.toString(), '{"a":1}', 'a link whose target stays inside is read');
  t.equal(code(() => readProjectFile(sb.project, 'in.json', { cap: CAP, kind: 'definition', links: 'refuse' })), 'SC_FILE_REFUSED', 'unless links are refused');
});

t.test('refuses a FIFO without waiting for a writer', async (t) => {
  const sb = hostile();
  // If this blocked, the test would never end: the primitive must refuse it at once.
  t.equal(code(() => readProjectFile(sb.project, 'fifo.json', { cap: CAP, kind: 'manifest' })), 'SC_FILE_REFUSED');
  t.match(code(() => readUserFile(join(sb.project, 'fifo.json'), { cap: CAP, kind: 'definition' })), 'SC_FILE_REFUSED', 'a user-given FIFO too');
});

t.test('a link to /dev/zero or out of the project is never followed', async (t) => {
  const sb = hostile();
  t.equal(code(() => readProjectFile(sb.project, 'zero.json', { cap: CAP, kind: 'manifest' })), 'SC_PATH_OUTSIDE');
  t.equal(code(() => readProjectFile(sb.project, 'out.json', { cap: CAP, kind: 'manifest' })), 'SC_PATH_OUTSIDE');
  t.equal(code(() => readProjectFile(sb.project, 'up/outside.json', { cap: CAP, kind: 'manifest' })), 'SC_PATH_OUTSIDE', 'nor a directory link above the file');
  t.equal(code(() => readProjectFile(sb.project, '../outside.json', { cap: CAP, kind: 'manifest' })), 'SC_PATH_OUTSIDE');
  t.equal(code(() => readUserFile('/dev/zero', { cap: CAP, kind: 'definition' })), 'SC_FILE_REFUSED', 'a user naming /dev/zero gets a refusal, not 3 GiB');
  t.equal(code(() => readUserFile(join(sb.project, 'zero.json'), { cap: CAP, kind: 'definition' })), 'SC_FILE_REFUSED', 'or a link to it');
});

t.test('a sparse 1 GiB file is refused from its size, without reading it', async (t) => {
  const sb = hostile();
  const before = process.memoryUsage().rss;
  const err = (() => {
    try {
      readProjectFile(sb.project, 'giant.json', { cap: CAP, kind: 'definition' });
    } catch (e) {
      return e as { code: string; message: string; detail: unknown };
    }
  })();
  t.equal(err?.code, 'SC_FILE_TOO_LARGE');
  t.match(err?.message, /1073741824 bytes, over the 1024-byte cap/);
  t.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'memory did not grow by the file size');
  const head = readProjectFile(sb.project, 'giant.json', { cap: CAP, kind: 'file', overflow: 'truncate' });
  t.equal(head.bytes.length, CAP, 'truncate mode returns the first cap bytes');
  t.equal(head.truncated, true);
  const page = readProjectFile(sb.project, 'giant.json', { cap: 16, kind: 'file', overflow: 'truncate', offset: 1024 ** 3 - 8 });
  t.equal(page.bytes.length, 8, 'an offset pages to the end');
  t.equal(page.truncated, false);
});

t.test('directories, missing files and absent paths have their own codes', async (t) => {
  const sb = hostile();
  t.equal(code(() => readProjectFile(sb.project, 'dir', { cap: CAP, kind: 'manifest' })), 'SC_FILE_REFUSED');
  t.equal(code(() => readProjectFile(sb.project, 'none.json', { cap: CAP, kind: 'manifest' })), 'SC_FILE_NOT_FOUND');
  t.equal(code(() => readProjectFile(sb.project, 'nodir/none.json', { cap: CAP, kind: 'manifest' })), 'SC_FILE_NOT_FOUND');
  t.equal(tryReadProjectFile(sb.project, 'none.json', { cap: CAP, kind: 'manifest' }), undefined);
  t.equal(code(() => tryReadProjectFile(sb.project, 'fifo.json', { cap: CAP, kind: 'manifest' })), 'SC_FILE_REFUSED', 'try… only forgives absence');
  t.equal(code(() => readUserFile(join(sb.root, 'nothing.yaml'), { cap: CAP, kind: 'definition' })), 'SC_FILE_NOT_FOUND');
});

t.test('reads a line range, scanning at most the cap', async (t) => {
  const sb = sandbox('lines');
  writeFileSync(join(sb.project, 'big.txt'), Array.from({ length: 10000 }, (_, i) => `line ${i + 1}`).join('\n'));
  const r = readProjectLines(sb.project, 'big.txt', { start: 3, count: 2, cap: 1 << 20, kind: 'file' });
  t.same(r.lines, ['line 3', 'line 4']);
  t.equal(r.truncated, true);
  const end = readProjectLines(sb.project, 'big.txt', { start: 9999, count: 5, cap: 1 << 20, kind: 'file' });
  t.same(end.lines, ['line 9999', 'line 10000'], 'the last line needs no newline');
  t.equal(end.truncated, false);
  const capped = readProjectLines(sb.project, 'big.txt', { start: 1, count: 10000, cap: 20, kind: 'file' });
  t.same(capped.lines, ['line 1', 'line 2'], 'only whole lines within the cap');
  t.equal(capped.truncated, true);
  t.equal(code(() => readProjectLines(hostile().project, 'fifo.json', { start: 1, count: 1, cap: CAP, kind: 'file' })), 'SC_FILE_REFUSED');
});

t.test('listing and walking never follow a link', async (t) => {
  const sb = hostile();
  mkdirSync(join(sb.project, 'dir', 'deep'));
  writeFileSync(join(sb.project, 'dir', 'deep', 'x.ts'), '');
  const kinds = Object.fromEntries(listProjectDir(sb.project, '').map((e) => [e.name, e.kind]));
  t.match(kinds, { 'ok.json': 'file', 'fifo.json': 'other', 'zero.json': 'link', 'out.json': 'link', up: 'link', dir: 'dir' });
  t.equal(code(() => listProjectDir(sb.project, 'up')), 'SC_FILE_REFUSED', 'a linked directory is not listed');
  const seen: string[] = [];
  // Ask to enter everything, links included: the walker enters only real directories.
  walkProject(sb.project, { maxDepth: 5, visit: (dir, entries) => (seen.push(dir), entries.map((e) => e.name)) });
  t.same(seen, ['', 'dir', 'dir/deep']);
  const shallow: string[] = [];
  walkProject(sb.project, { maxDepth: 1, visit: (dir, entries) => (shallow.push(dir), entries.map((e) => e.name)) });
  t.same(shallow, ['', 'dir'], 'stops at maxDepth');
  const stopped: string[] = [];
  walkProject(sb.project, { maxDepth: 5, visit: (dir) => (stopped.push(dir), false) });
  t.same(stopped, [''], 'false stops the walk');
});
