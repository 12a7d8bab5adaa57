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
import { guardedStatePaths, namedPaths, shownIn } from '../../../src/engine/spawn/state-paths.js';
import { shippedPolicy } from '../../../src/policy/load.js';

const L = shippedPolicy().limits.runners;

function world(t: { teardown(fn: () => void): void }) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-state-paths-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const state = join(home, '.tool');
  mkdirSync(join(state, 'hooks'), { recursive: true });
  const policy = { ...shippedPolicy().sandbox, tool_state: { tool: ['~/.tool'] }, tool_state_read_only: { tool: ['~/.tool/settings.json', '~/.tool/hooks'] }, tool_state_private: {} };
  const plan = (over: Record<string, unknown> = {}) => ({
    argv: ['/bin/sh'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: L, project: null as string | null, network: false, profileDir: null, policy, stateKeys: ['tool'], ...over,
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
      env: { PATH: '/usr/local/bin:~/.tool/bin/' },
      note: 'see /opt/notes/readme.',
    }),
  );
  t.same(
    namedPaths(join(state, 'settings.json'), home, L).sort(),
    [join(home, '.tool/hooks/format.sh'), join(home, '.tool/scripts/check.py'), '/opt/tools/status.sh', '/usr/local/bin', join(home, '.tool/bin'), '/opt/notes/readme'].sort(),
    'each path once: a PATH-style list split, a trailing slash or full stop dropped',
  );
  t.same(namedPaths(join(state, 'settings.json'), home, { ...L, state_named_paths: 2 }), [join(home, '.tool/hooks/format.sh'), join(home, '.tool/scripts/check.py')], 'the first state_named_paths of them, in order');
  t.same(namedPaths(join(state, 'missing.json'), home, L), [], 'a missing file names nothing');
  t.same(namedPaths(join(state, 'hooks'), home, L), [], 'nor does a folder');
  t.same(guardedStatePaths(shippedPolicy().sandbox, ['nothing-listed'], home, null, L), [], 'a command with no entry has nothing guarded');
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

t.test('a folder a setting names is never held read-only: Codex lists every trusted project, and the project stays writable', async (t) => {
  const w = world(t);
  const project = join(w.home, 'code', 'app');
  mkdirSync(project, { recursive: true });
  writeFileSync(join(w.state, 'settings.json'), `[projects."${project}"]\ntrust_level = "trusted"\n[projects."${join(w.home, 'code')}"]\ntrust_level = "trusted"\n`);
  t.same(guardedStatePaths(w.policy, ['tool'], w.home, project, L), [join(w.state, 'settings.json'), join(w.state, 'hooks')], 'only the listed paths are guarded');
  t.match(inside(w.plan({ project }), tryWrite(join(project, 'main.c'))), 'WROTE', 'the project it names is writable');
});

t.test('a named script below a linked folder: the sandbox still starts, and the real script is read-only where it is visible', async (t) => {
  const w = world(t);
  // A stow-style state: ~/.tool/hooks is a link into a dotfiles checkout, which is the project.
  const dotfiles = join(w.home, 'dotfiles');
  mkdirSync(join(dotfiles, 'tool-hooks'), { recursive: true });
  writeFileSync(join(dotfiles, 'tool-hooks', 'fmt.sh'), 'echo fmt\n');
  rmSync(join(w.state, 'hooks'), { recursive: true });
  symlinkSync(join(dotfiles, 'tool-hooks'), join(w.state, 'hooks'));
  writeFileSync(join(w.state, 'settings.json'), JSON.stringify({ hooks: { command: '~/.tool/hooks/fmt.sh' } }));
  const out = inside(w.plan({ project: dotfiles }), `${tryWrite(join(dotfiles, 'tool-hooks', 'fmt.sh'))}; ${tryWrite(join(dotfiles, 'other.txt'))}`);
  t.match(out, `REFUSED ${join(dotfiles, 'tool-hooks', 'fmt.sh')}`, 'the script, at its real place in the project');
  t.match(out, `WROTE ${join(dotfiles, 'other.txt')}`);
  t.match(inside(w.plan(), 'echo started'), 'started', 'without the project too: nothing is bound through the link');
});

t.test('a script the settings name inside a project outside the home is read-only too', async (t) => {
  const w = world(t);
  const project = join(w.root, 'srv', 'repo');
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'hook.sh'), 'echo hook\n');
  writeFileSync(join(w.state, 'settings.json'), JSON.stringify({ hooks: { command: `sh ${join(project, 'hook.sh')}` } }));
  const out = inside(w.plan({ project }), `${tryWrite(join(project, 'hook.sh'))}; ${tryWrite(join(project, 'src.c'))}`);
  t.match(out, `REFUSED ${join(project, 'hook.sh')}`);
  t.match(out, `WROTE ${join(project, 'src.c')}`);
});

t.test("a private file: a runner writes only its copy; the real one is read-only wherever a writable place shows it", async (t) => {
  const w = world(t);
  const dot = join(w.home, '.tool.json');
  writeFileSync(dot, '{"servers":{}}');
  const policy = { ...w.policy, tool_state_private: { tool: ['~/.tool.json'] } };
  const copy = join(w.root, 'copy.json');
  writeFileSync(copy, '{"servers":{}}');
  // The project is the home folder itself, so the real file is in plain sight.
  const out = inside(w.plan({ policy, project: w.home, copies: new Map([[dot, copy]]) }), `${tryWrite(dot)}; cat ${dot}`);
  t.match(out, `WROTE ${dot}`, 'the CLI can write it...');
  t.equal(readFileSync(dot, 'utf8'), '{"servers":{}}', '...but the real file is untouched');
  t.equal(readFileSync(copy, 'utf8'), '{"servers":{}}x\n', 'the write went to the copy');
  t.match(inside(w.plan({ policy, project: w.home }), tryWrite(dot)), `REFUSED ${dot}`, 'with no copy (not a runner) it is read-only');
});

t.test('a protected file cannot be moved away by renaming the folder it is in', async (t) => {
  const w = world(t);
  mkdirSync(join(w.state, 'scripts'));
  writeFileSync(join(w.state, 'scripts', 'status.sh'), 'echo status\n');
  writeFileSync(join(w.state, 'settings.json'), JSON.stringify({ statusLine: { command: '~/.tool/scripts/status.sh' } }));
  const out = inside(w.plan(), `mv ${join(w.state, 'scripts')} ${join(w.state, 's2')} 2>/dev/null && echo MOVED || echo PINNED; ${tryWrite(join(w.state, 'scripts', 'new.sh'))}`);
  t.match(out, 'PINNED', 'its folder cannot be renamed');
  t.match(out, `WROTE ${join(w.state, 'scripts', 'new.sh')}`, 'and stays writable');
  t.equal(readFileSync(join(w.state, 'scripts', 'status.sh'), 'utf8'), 'echo status\n');
});

t.test('a project that is the home: a state folder linked elsewhere does not stop bwrap, and the project\'s own protected paths stay read-only', async (t) => {
  const w = world(t);
  // ~/.tool is a link to a folder outside the home, which the project (the home) shows as a dangling link.
  const elsewhere = join(w.root, 'elsewhere-tool');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'settings.json'), '{}');
  rmSync(w.state, { recursive: true });
  symlinkSync(elsewhere, w.state);
  t.match(inside(w.plan({ project: w.home }), 'echo started'), 'started');
  // A state folder that is also a protected project path (.claude): pinning what is inside it never makes it writable again.
  const claude = join(w.home, '.claude');
  mkdirSync(join(claude, 'scripts'), { recursive: true });
  writeFileSync(join(claude, 'scripts', 'status.sh'), 'echo s\n');
  writeFileSync(join(claude, 'settings.json'), JSON.stringify({ statusLine: { command: '~/.claude/scripts/status.sh' } }));
  const policy = { ...w.policy, tool_state: { claude: ['~/.claude'] }, tool_state_read_only: { claude: ['~/.claude/settings.json'] } };
  const out = inside(w.plan({ policy, stateKeys: ['claude'], project: w.home }), `${tryWrite(join(claude, 'notes.txt'))}; ${tryWrite(join(claude, 'scripts', 'other.sh'))}`);
  t.match(out, `REFUSED ${join(claude, 'notes.txt')}`, '.claude in the project stays read-only');
  t.match(out, `REFUSED ${join(claude, 'scripts', 'other.sh')}`, 'inside it too');
});

t.test('a home that is not absolute, or the root, anchors nothing', async (t) => {
  const sp = shippedPolicy().sandbox;
  for (const home of ['relative/home', '/', undefined]) {
    t.same(guardedStatePaths(sp, ['claude'], home, null, L), [], `HOME=${String(home)}`);
  }
});

t.test('whether a writable place shows a file: by its path, the file behind a link, or a linked parent', async (t) => {
  const w = world(t);
  const dot = join(w.home, '.tool.json');
  writeFileSync(dot, '{}');
  const project = join(w.root, 'project');
  mkdirSync(project);
  t.ok(shownIn(dot, [w.home]), 'a project that is the home shows it');
  t.notOk(shownIn(dot, [project, w.state]), 'a project elsewhere and the state folder do not');
  rmSync(dot);
  writeFileSync(join(project, 'tool.json'), '{}');
  symlinkSync(join(project, 'tool.json'), dot);
  t.ok(shownIn(dot, [project]), 'a project that holds the file behind the link does');
});

t.test('a private file linked into the state folder, in a project that is the home: its pins never undo the other protections', async (t) => {
  const w = world(t);
  writeFileSync(join(w.state, 'settings.json'), '{}');
  writeFileSync(join(w.state, 'tool.json'), '{}');
  symlinkSync(join(w.state, 'tool.json'), join(w.home, '.tool.json'));
  const policy = { ...w.policy, tool_state_private: { tool: ['~/.tool.json'] } };
  const out = inside(w.plan({ policy, project: w.home }), [join(w.state, 'settings.json'), join(w.state, 'hooks', 'new.sh'), join(w.state, 'tool.json'), join(w.state, 'log.txt')].map(tryWrite).join('; '));
  t.match(out, `REFUSED ${join(w.state, 'settings.json')}`);
  t.match(out, `REFUSED ${join(w.state, 'hooks', 'new.sh')}`);
  t.match(out, `REFUSED ${join(w.state, 'tool.json')}`, 'the private file behind the link');
  t.match(out, `WROTE ${join(w.state, 'log.txt')}`, 'the rest of the state stays writable');
});

t.test('a private file below a linked folder, in a project that is the home: bwrap starts, and it gets no copy', async (t) => {
  const w = world(t);
  const elsewhere = join(w.root, 'elsewhere-config');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'app.json'), '{}');
  symlinkSync(elsewhere, join(w.home, '.config'));
  const policy = { ...w.policy, tool_state_private: { tool: ['~/.config/app.json'] } };
  const copy = join(w.root, 'copy.json');
  writeFileSync(copy, '{}');
  t.match(inside(w.plan({ policy, project: w.home, copies: new Map([[join(w.home, '.config', 'app.json'), copy]]) }), 'echo started'), 'started');
});

t.test('with the shipped policy, what steers a coding CLI\'s next session outside any sandbox is read-only: Codex\'s command rules and instructions, Claude Code\'s user memory', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-state-shipped-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const files = {
    codex: ['.codex/config.toml', '.codex/rules/default.rules', '.codex/policy/x.codexpolicy', '.codex/AGENTS.md', '.codex/prompts/fix.md'],
    claude: ['.claude/settings.json', '.claude/CLAUDE.md', '.claude/rules/style.md', '.claude/output-styles/terse.md'],
  };
  for (const rel of [...files.codex, ...files.claude]) {
    mkdirSync(join(home, rel, '..'), { recursive: true });
    writeFileSync(join(home, rel), 'mine\n');
  }
  const policy = shippedPolicy().sandbox;
  for (const [cli, rels] of Object.entries(files)) {
    const plan = { argv: ['/bin/sh'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: L, project: null, network: false, profileDir: null, policy, stateKeys: [cli] };
    // An allow rule in ~/.codex/rules runs that command outside Codex's sandbox without asking.
    const out = inside(plan as unknown as Parameters<typeof inside>[0], [...rels.map((r) => tryWrite(join(home, r))), tryWrite(join(home, `.${cli}`, 'history.jsonl'))].join('; '));
    for (const r of rels) t.match(out, `REFUSED ${join(home, r)}`, `${cli}: ${r}`);
    t.match(out, `WROTE ${join(home, `.${cli}`, 'history.jsonl')}`, `${cli}: the rest of its state stays writable`);
  }
});
