// The scan for protected paths below the top of a project: what it finds, what it skips,
// where it stops, and that a folder it does not read again (unchanged since the last scan)
// really is unchanged: a nested .claude or .git made since is always found.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { type Policy, shippedPolicy } from '../../src/policy/load.js';
import { protectedLayout } from '../../src/policy/protected-scan.js';

const policy = shippedPolicy();
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function project(t: any) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-scan-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

const rels = (p: Policy, project: string) => protectedLayout(p, project).entries.map((e) => e.rel).sort();

t.test('finds protected names at any depth, never below a match, a link or a skipped folder', async (t) => {
  const p = project(t);
  mkdirSync(join(p, 'a', 'b', '.vscode'), { recursive: true });
  mkdirSync(join(p, 'a', '.git', 'x', '.claude'), { recursive: true });
  mkdirSync(join(p, 'node_modules', 'm', '.git'), { recursive: true });
  mkdirSync(join(p, 'elsewhere', '.claude'), { recursive: true });
  symlinkSync('elsewhere', join(p, 'linked'));
  writeFileSync(join(p, 'c.mcp.json'), '{}');
  writeFileSync(join(p, 'pkg.gitmodules'), '');
  mkdirSync(join(p, 'd'));
  writeFileSync(join(p, 'd', '.gitmodules'), '');
  const l = protectedLayout(policy, p);
  t.same(l.entries.map((e) => [e.rel, e.rule, e.kind]).sort(), [
    ['a/.git', 'git-metadata', 'dir'],
    ['a/b/.vscode', 'host-project-configs', 'dir'],
    ['d/.gitmodules', 'git-submodules', 'file'],
    ['elsewhere/.claude', 'host-project-configs', 'dir'],
  ]);
  t.equal(l.truncated, false);
});

t.test('the bounds: a scan past scan_depth or scan_entries says it was cut short, shallow matches first', async (t) => {
  const p = project(t);
  mkdirSync(join(p, 'x', 'y', 'z', '.claude'), { recursive: true });
  mkdirSync(join(p, 'top', '.claude'), { recursive: true });
  const shallow = { ...policy, limits: { ...policy.limits, protection: { ...policy.limits.protection, scan_depth: 2 } } } as Policy;
  t.same(protectedLayout(shallow, p), { entries: [{ rel: 'top/.claude', rule: 'host-project-configs', description: policy.protected_paths.never_write.find((r) => r.id === 'host-project-configs')!.description, via: null, kind: 'dir', hold: false }], truncated: true });
  const few = { ...policy, limits: { ...policy.limits, protection: { ...policy.limits.protection, scan_entries: 1 } } } as Policy;
  t.match(protectedLayout(few, p), { truncated: true });
  t.same(rels(policy, p), ['top/.claude', 'x/y/z/.claude'], 'within the shipped bounds both are found');
});

t.test('a folder is read again whenever it changed since the last scan, also when its mtime is set back', async (t) => {
  const p = project(t);
  mkdirSync(join(p, 'sub', 'deep'), { recursive: true });
  await pause(policy.limits.protection.scan_cache_racy_ms + 50);
  t.same(rels(policy, p), [], 'nothing yet (and the listings are now kept)');
  mkdirSync(join(p, 'sub', 'deep', '.claude'));
  t.same(rels(policy, p), ['sub/deep/.claude'], 'a new nested host config');
  await pause(policy.limits.protection.scan_cache_racy_ms + 50);
  t.same(rels(policy, p), ['sub/deep/.claude']);
  const before = statSync(join(p, 'sub'), { bigint: true });
  mkdirSync(join(p, 'sub', '.git'));
  // Set back to the very nanosecond, as `touch -d @S.N` inside a sandbox could.
  const ns = before.mtimeNs;
  spawnSync('touch', ['-d', `@${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, '0')}`, join(p, 'sub')]);
  t.equal(statSync(join(p, 'sub'), { bigint: true }).mtimeNs, before.mtimeNs, 'the folder shows the modification time it had at the last scan');
  t.same(rels(policy, p), ['sub/.git', 'sub/deep/.claude'], 'a new nested repository all the same: its change time moved');
  rmSync(join(p, 'sub', 'deep'), { recursive: true });
  t.same(rels(policy, p), ['sub/.git'], 'and one gone is gone');
});

t.test('a folder changed in the same moment as the scan is not trusted next time', async (t) => {
  const p = project(t);
  mkdirSync(join(p, 'sub'));
  // No pause: the folder changed just now, so the listing is used once and never kept as current.
  t.same(rels(policy, p), []);
  mkdirSync(join(p, 'sub', '.vscode'));
  t.same(rels(policy, p), ['sub/.vscode']);
});
