// What of a coding CLI's own state stays read-only in its sandbox: the listed settings,
// the programs they name, and the real files behind links, wherever the sandbox shows
// them writable (a state folder, the project). Checked on the bwrap arguments and, for
// real, by writing from inside a sandbox.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sandboxSupport } from '../../../src/engine/spawn/index.js';
import { sandboxArgv } from '../../../src/engine/spawn/sandbox.js';
import { guardedStatePaths, namedPaths } from '../../../src/engine/spawn/state-paths.js';
import { shippedPolicy } from '../../../src/policy/load.js';

function world(t: { teardown(fn: () => void): void }) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-state-paths-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const state = join(home, '.tool');
  mkdirSync(join(state, 'hooks'), { recursive: true });
  const policy = { ...shippedPolicy().sandbox, tool_state: { tool: ['~/.tool'] }, tool_state_read_only: { tool: ['~/.tool/settings.json', '~/.tool/hooks'] }, tool_state_private: {} };
  const plan = (over: Record<string, unknown> = {}) => ({
    argv: ['/bin/sh'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], project: null as string | null, network: false, profileDir: null, policy, stateKeys: ['tool'], ...over,
  });
  return { root, home, state, policy, plan };
}

function bwrap(): string {
  const b = sandboxSupport().bwrap;
  if (!b) throw new Error('bwrap is needed here (apt-get install -y bubblewrap)');
  return b;
}

/** Runs `sh -c script` in the sandbox the plan describes; its stdout. */
function inside(plan: ReturnType<ReturnType<typeof world>['plan']>, script: string): string {
  const b = bwrap();
  const argv = sandboxArgv({ ...plan, bwrap: b, argv: ['/bin/sh', '-c', script] });
  const r = spawnSync(b, argv.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sandbox failed: ${r.stderr}`);
  return r.stdout;
}

const tryWrite = (path: string) => `(echo x >> ${path}) 2>/dev/null && echo WROTE ${path} || echo REFUSED ${path}`;

t.test('the paths a setting file names: absolute, ~/ and $HOME/, never part of a URL or a relative path', async (t) => {
  const { home, state } = world(t);
  writeFileSync(
    join(state, 'settings.json'),
    JSON.stringify({
      hooks: { PostToolUse: [{ hooks: [{ type: 'command', command: '~/.tool/hooks/format.sh --all' }, { type: 'command', command: 'python3 $HOME/.tool/scripts/check.py' }] }] },
      statusLine: { type: 'command', command: 'bash /opt/tools/status.sh' },
      docs: 'https://example.com/hooks/guide',
      relative: 'scripts/local.sh',
    }),
  );
  t.same(namedPaths(join(state, 'settings.json'), home).sort(), [join(home, '.tool/hooks/format.sh'), join(home, '.tool/scripts/check.py'), '/opt/tools/status.sh'].sort());
  t.same(namedPaths(join(state, 'missing.json'), home), [], 'a missing file names nothing');
  t.same(namedPaths(join(state, 'hooks'), home), [], 'nor does a folder');
  t.same(guardedStatePaths(shippedPolicy().sandbox, ['nothing-listed'], home), [], 'a command with no entry has nothing guarded');
});

t.test('a script the settings name, inside the writable state, is read-only too; the settings and its folder are', async (t) => {
  const w = world(t);
  mkdirSync(join(w.state, 'scripts'));
  writeFileSync(join(w.state, 'scripts', 'status.sh'), 'echo status\n');
  writeFileSync(join(w.state, 'settings.json'), JSON.stringify({ statusLine: { command: '~/.tool/scripts/status.sh' } }));
  writeFileSync(join(w.state, 'hooks', 'x.sh'), 'echo hook\n');
  const out = inside(w.plan(), [join(w.state, 'settings.json'), join(w.state, 'scripts', 'status.sh'), join(w.state, 'hooks', 'x.sh'), join(w.state, 'scripts', 'other.sh')].map(tryWrite).join('; '));
  t.match(out, `REFUSED ${join(w.state, 'settings.json')}`);
  t.match(out, `REFUSED ${join(w.state, 'scripts', 'status.sh')}`, 'the status line script it names');
  t.match(out, `REFUSED ${join(w.state, 'hooks', 'x.sh')}`, 'a script in the protected folder');
  t.match(out, `WROTE ${join(w.state, 'scripts', 'other.sh')}`, 'what nothing names stays writable');
  t.equal(readFileSync(join(w.state, 'scripts', 'status.sh'), 'utf8'), 'echo status\n');
});

t.test('a project that shows the same files cannot undo it: the project is bound first, the protection on top', async (t) => {
  const w = world(t);
  writeFileSync(join(w.state, 'settings.json'), '{}');
  // The user trusts the state folder itself as a project (a config repository).
  const argv = sandboxArgv(w.plan({ project: w.state }));
  const at = (a: string) => argv.join(' ').lastIndexOf(a);
  t.ok(at(`--ro-bind ${join(w.state, 'settings.json')}`) > at(`--bind ${w.state} ${w.state}`), 'the read-only bind comes after the project bind');
  t.match(inside(w.plan({ project: w.state }), tryWrite(join(w.state, 'settings.json'))), 'REFUSED');
  t.equal(readFileSync(join(w.state, 'settings.json'), 'utf8'), '{}');
});

t.test('settings that are a link into the project: the real file is read-only where the project shows it', async (t) => {
  const w = world(t);
  const dotfiles = join(w.root, 'dotfiles');
  mkdirSync(dotfiles);
  writeFileSync(join(dotfiles, 'tool-settings.json'), '{}');
  symlinkSync(join(dotfiles, 'tool-settings.json'), join(w.state, 'settings.json'));
  const out = inside(w.plan({ project: dotfiles }), `${tryWrite(join(dotfiles, 'tool-settings.json'))}; ${tryWrite(join(dotfiles, 'notes.txt'))}`);
  t.match(out, `REFUSED ${join(dotfiles, 'tool-settings.json')}`, 'the file behind the link, at its place in the project');
  t.match(out, `WROTE ${join(dotfiles, 'notes.txt')}`, 'the rest of the project stays writable');
  t.equal(readFileSync(join(dotfiles, 'tool-settings.json'), 'utf8'), '{}');
});
