// The machine's real toolchains in the sandbox, as a person runs them: `shadowcode test --yes --
// COMMAND` in a trusted project. pytest through pyenv's shim runs the same python as it does
// outside; `make test` runs `cargo test` (rustup's proxy in ~/.cargo/bin) for a crate with no
// dependencies and one with a path dependency outside the project (granted with `sandbox allow`)
// and a git dependency (cloned into the project's private cargo cache, offline); `npm install`
// with the network leaves the user's ~/.npm as it was.
//
// These need the toolchains this kind of machine has, CI's included (pyenv's python 3.11.7 under
// ~/.pyenv, rustup's cargo under ~/.cargo/bin, npm; /work/.library/env/machines/node.md lists
// them): as root or in CI a missing one fails here with what is missing, never skips. They run as
// the user running the suite; the toolchains are that user's (root's home is not readable to another
// user, so the ordinary-user variants are the hermetic fakes of toolchains.test.ts, and an ordinary
// user without pyenv or rustup of their own sees those two cases skipped by name).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cli, type Sandbox, sandbox } from '../../fixtures/env.js';

const HOME = homedir();
const PATH = process.env.PATH ?? '';

// CI runs the suite as root on a machine that has these toolchains: there a missing one is a failure.
// An ordinary user's toolchains are their own (on this kind of machine they are root's, in a home
// another user cannot read); one they have not installed is said, by name, as a skip.
const REQUIRED = process.getuid?.() === 0 || Boolean(process.env.CI);

/** Where the toolchain is on this user's PATH, or a failure (a named skip for an ordinary user outside CI) that says what is missing. */
function need(t: any, name: string, where: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { env: { PATH, HOME }, encoding: 'utf8' });
  const at = r.stdout.trim();
  if (r.status !== 0 || !at.startsWith(where)) {
    const what = `this test needs ${name} from ${where} on PATH (CI's machines have it: /work/.library/env/machines/node.md); found ${at || 'nothing'}`;
    if (REQUIRED) t.fail(what);
    else t.skip(`${what}; not installed for this user`);
    return null;
  }
  return at;
}

/**
 * A trusted project whose processes get this user's real HOME and PATH; private caches in a throwaway
 * folder. `xdg`: XDG_CACHE_HOME (default a throwaway folder; null: unset, with a home of the test's own).
 */
async function project(t: any, o: { home?: string; network?: boolean; xdg?: string | null; pyenv?: boolean } = {}): Promise<Sandbox> {
  const sb = sandbox('sc-real');
  const xdg = o.xdg === undefined ? join(sb.root, 'cache') : o.xdg;
  // A home of the test's own has no ~/.pyenv: the user's is named by PYENV_ROOT, as a user who keeps it elsewhere does.
  const pyenv = process.env.PYENV_ROOT ?? (o.pyenv ? join(HOME, '.pyenv') : undefined);
  sb.env = { ...sb.env, HOME: o.home ?? HOME, PATH, ...(xdg ? { XDG_CACHE_HOME: xdg } : {}), ...(pyenv ? { PYENV_ROOT: pyenv } : {}) };
  const r = await cli(sb, ['--workspace', sb.project, 'trust', ...(o.network ? ['--network'] : [])]);
  t.equal(r.code, 0, r.stderr);
  return sb;
}

async function test(sb: Sandbox, argv: string[]) {
  const r = await cli(sb, ['--json', '--workspace', sb.project, 'test', '--yes', '--', ...argv]);
  return { code: r.code, data: JSON.parse(r.stdout || '{}') as { passed: boolean; output_tail: string; reason?: string }, stderr: r.stderr };
}

t.test("pytest through pyenv's shim passes in the sandbox, with the very python it runs outside", async (t) => {
  if (!need(t, 'pytest', join(HOME, '.pyenv/shims'))) return;
  const sb = await project(t);
  mkdirSync(join(sb.project, 'tests'));
  writeFileSync(join(sb.project, 'tests', 'test_where.py'), 'import sys\n\ndef test_runs():\n    print("@", sys.prefix, sys.version.split()[0])\n    assert True\n');
  const which = 'python3 -c "import sys; print(\\"@\\", sys.prefix, sys.version.split()[0])"';
  const outside = spawnSync('sh', ['-c', which], { cwd: sb.project, env: { PATH, HOME, ...(process.env.PYENV_ROOT ? { PYENV_ROOT: process.env.PYENV_ROOT } : {}) }, encoding: 'utf8' });
  t.equal(outside.status, 0, outside.stderr);
  // `sh -c 'python3 …'`: the shell finds python3 on PATH itself, as make or an npm script would.
  const r = await test(sb, ['sh', '-c', `${which} && pytest -q -s tests`]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.data.passed, true, r.data.output_tail);
  const lines = r.data.output_tail.split('\n').filter((l) => l.startsWith('@ '));
  t.equal(lines[0], outside.stdout.trim(), 'sh -c python3: the same interpreter as outside');
  t.match(lines[0], `${HOME}/.pyenv/versions/`, "pyenv's, not the system's");
  t.equal(lines[1], lines[0], 'and pytest runs on it');
  t.match(r.data.output_tail, /1 passed/);
});

/** A home of the test's own, so that the project's caches folder (~/.cache/shadowcode or under XDG_CACHE_HOME) is thrown away with it. */
function ownHome(): string {
  const home = join(sandbox('sc-real-home').root, 'home');
  mkdirSync(home);
  return realpathSync(home);
}

t.test("pip finds its cache through the link at its usual path, into the project's private one, and what it writes there is kept", async (t) => {
  if (!need(t, 'python3', join(HOME, '.pyenv/shims'))) return;
  const home = ownHome();
  const sb = await project(t, { home, xdg: null, pyenv: true });
  // `pip cache dir` names the cache it uses (the link resolved); `pip cache info` reads it; the probe is written there.
  const r = await test(sb, ['sh', '-c', '[ -L ~/.cache/pip ] && d=$(python3 -m pip cache dir) && echo "@ $d" && python3 -m pip cache info && echo probe > "$d/probe"']);
  t.equal(r.data.passed, true, r.data.output_tail);
  const cache = join(home, '.cache', 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  const priv = join(cache, hash as string, 'pip');
  t.ok(r.data.output_tail.includes(`@ ${priv}`), "pip's cache is the project's private one");
  t.equal(readFileSync(join(priv, 'probe'), 'utf8'), 'probe\n', 'and what it writes there is kept');
  t.notOk(existsSync(join(HOME, '.cache', 'pip', 'probe')), "never in the user's own");
});

t.test("with XDG_CACHE_HOME set in the home, pip's cache is still the project's private one, and what it writes there is there at the next start", async (t) => {
  if (!need(t, 'python3', join(HOME, '.pyenv/shims'))) return;
  const home = ownHome();
  const xdg = join(home, 'xdg-cache');
  const sb = await project(t, { home, xdg, pyenv: true });
  // pip follows XDG_CACHE_HOME ($XDG_CACHE_HOME/pip), not ~/.cache/pip.
  const r = await test(sb, ['sh', '-c', 'd=$(python3 -m pip cache dir) && echo "@ $d" && python3 -m pip cache info && echo probe > "$d/probe"']);
  t.equal(r.data.passed, true, r.data.output_tail);
  const cache = join(xdg, 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  const priv = join(cache, hash as string, 'pip');
  t.ok(r.data.output_tail.includes(`@ ${priv}`), "pip's cache is the project's private one");
  t.equal(readFileSync(join(priv, 'probe'), 'utf8'), 'probe\n', 'what it writes there is kept on the host');
  t.notOk(existsSync(join(xdg, 'pip', 'probe')), "not in the user's own $XDG_CACHE_HOME/pip");
  const next = await test(sb, ['sh', '-c', 'cat "$(python3 -m pip cache dir)/probe"']);
  t.equal(next.data.passed, true, next.data.output_tail);
  t.match(next.data.output_tail, /^probe$/m, 'and there at the next start');
});

// A literal ~ in XDG_CACHE_HOME (a config with no shell to expand it): pip expands it in the cache
// folder it ends up with, so its cache is ~/xc/pip; the sandbox must link the project's cache there,
// and `sandbox show` name that path, or what pip downloads is lost with the private home.
t.test("with XDG_CACHE_HOME=~/xc (a literal ~), pip's cache is the one sandbox show names, the project's private one, and kept", async (t) => {
  if (!need(t, 'python3', join(HOME, '.pyenv/shims'))) return;
  const home = ownHome();
  const sb = await project(t, { home, xdg: '~/xc', pyenv: true });
  const outside = spawnSync('python3', ['-m', 'pip', 'cache', 'dir'], { cwd: sb.project, env: sb.env, encoding: 'utf8' });
  t.equal(outside.stdout.trim(), join(home, 'xc', 'pip'), 'pip itself reads ~/xc as the home\'s xc');
  const show = await cli(sb, ['--json', '--workspace', sb.project, 'sandbox', 'show', '--', 'true']);
  const pip = (JSON.parse(show.stdout).caches as Array<{ name: string; at: string; from: string }>).find((c) => c.name === 'pip');
  t.match(pip, { at: join(home, 'xc', 'pip'), from: '$XDG_CACHE_HOME/pip' }, 'sandbox show names where pip writes');
  const r = await test(sb, ['sh', '-c', 'd=$(python3 -m pip cache dir) && echo "@ $d" && echo probe > "$d/probe"']);
  t.equal(r.data.passed, true, r.data.output_tail);
  // The caches folder takes no `~` value of XDG_CACHE_HOME: it is the default one.
  const cache = join(home, '.cache', 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  const priv = join(cache, hash as string, 'pip');
  t.ok(r.data.output_tail.includes(`@ ${priv}`), `pip's cache is the project's private one: ${r.data.output_tail}`);
  t.equal(readFileSync(join(priv, 'probe'), 'utf8'), 'probe\n', 'what it writes there is kept on the host');
  t.notOk(existsSync(join(home, 'xc')), "nothing written in the user's own ~/xc");
});

t.test("with npm_config_cache=~/npmc (a literal ~), npm's cache is the project's private one", async (t) => {
  if (!need(t, 'npm', '/usr/')) return;
  const home = ownHome();
  const sb = await project(t, { home, xdg: null });
  sb.env = { ...sb.env, npm_config_cache: '~/npmc' };
  const r = await test(sb, ['sh', '-c', 'd=$(npm config get cache) && echo "@ $d" && [ -L "$d" ] && echo probe > "$d/probe"']);
  t.equal(r.data.passed, true, r.data.output_tail);
  t.ok(r.data.output_tail.includes(`@ ${join(home, 'npmc')}`), 'npm reads ~/npmc as the home\'s npmc');
  const cache = join(home, '.cache', 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  t.equal(readFileSync(join(cache, hash as string, 'npm', 'probe'), 'utf8'), 'probe\n', "a link there into the project's private npm cache");
});

/** A git repository outside the project holding a crate, committed; a cargo git dependency on it needs no network. */
function gitCrate(dir: string): void {
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'Cargo.toml'), '[package]\nname = "gitdep"\nversion = "0.1.0"\nedition = "2021"\n');
  writeFileSync(join(dir, 'src', 'lib.rs'), 'pub fn three() -> i32 { 3 }\n');
  const git = (...a: string[]) => spawnSync('git', a, { cwd: dir, encoding: 'utf8', env: { PATH, HOME, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-qm', 'gitdep');
}

t.test('make test running cargo test passes: a crate with no dependencies, and one with a path dependency outside the project and a git dependency', async (t) => {
  if (!need(t, 'cargo', join(HOME, '.cargo/bin'))) return;
  const sb = await project(t);
  const crate = (dir: string, name: string, deps: string, body: string) => {
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(dir, 'Cargo.toml'), `[package]\nname = "${name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n${deps}`);
    writeFileSync(join(dir, 'src', 'lib.rs'), body);
  };
  crate(join(sb.project, 'tiny'), 'tiny', '', '#[test]\nfn adds() { assert_eq!(2 + 2, 4); }\n');
  const shared = join(sb.root, 'shared');
  crate(shared, 'shared', '', 'pub fn two() -> i32 { 2 }\n');
  const repo = join(sb.root, 'gitdep');
  gitCrate(repo);
  crate(join(sb.project, 'app'), 'app', `shared = { path = "../../shared" }\ngitdep = { git = "file://${repo}" }\n`, '#[test]\nfn five() { assert_eq!(shared::two() + gitdep::three(), 5); }\n');
  writeFileSync(join(sb.project, 'Makefile'), 'test:\n\tcd tiny && cargo test --offline\n\tcd app && cargo test\n');
  // The folders outside the project the build reads: granted, read-only.
  for (const dir of [shared, repo]) t.equal((await cli(sb, ['--workspace', sb.project, 'sandbox', 'allow', dir])).code, 0);
  const userGit = join(HOME, '.cargo', 'git');
  const before = existsSync(userGit) ? fingerprint(userGit) : null;
  const r = await test(sb, ['make', 'test']);
  t.equal(r.data.passed, true, r.data.output_tail);
  t.match(r.data.output_tail, /test adds \.\.\. ok/);
  t.match(r.data.output_tail, /test five \.\.\. ok/);
  // The git dependency was cloned into the project's private cache, not the user's ~/.cargo/git.
  const cache = join(sb.root, 'cache', 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  t.ok(existsSync(join(cache, hash as string, 'cargo-git', 'db')), 'cloned into the private cache');
  t.equal(existsSync(userGit) ? fingerprint(userGit) : null, before, "nothing written in the user's ~/.cargo/git");
});

/** A fingerprint of a folder: every path, its size and content. */
function fingerprint(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      h.update(`${p}\n`);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) h.update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

t.test("npm install with the network works in the sandbox and leaves the user's ~/.npm untouched", async (t) => {
  if (!need(t, 'npm', '/usr/')) return;
  const sb0 = sandbox('sc-npm-home');
  const home = join(sb0.root, 'home');
  // A user's npm cache as it is: one entry, which a sandboxed install must neither change nor add to.
  mkdirSync(join(home, '.npm', '_cacache'), { recursive: true });
  writeFileSync(join(home, '.npm', '_cacache', 'marker'), 'the user cache');
  const before = fingerprint(join(home, '.npm'));
  const sb = await project(t, { home: realpathSync(home), network: true });
  writeFileSync(join(sb.project, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
  const r = await test(sb, ['npm', 'install', '--no-audit', '--no-fund', 'is-number@7.0.0']);
  t.equal(r.data.passed, true, r.data.output_tail);
  t.ok(statSync(join(sb.project, 'node_modules', 'is-number', 'package.json')).isFile(), 'installed into the project');
  t.equal(fingerprint(join(home, '.npm')), before, "the user's ~/.npm is as it was");
  const cache = join(sb.root, 'cache', 'shadowcode', 'sandbox');
  const [hash] = readdirSync(cache);
  t.ok(existsSync(join(cache, hash as string, 'npm', '_cacache')), "npm wrote its cache in the project's private one");
});
