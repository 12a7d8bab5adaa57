// Toolchains under the home work in the sandbox with no configuration: hermetic fakes of the
// version managers' layouts (pyenv's shims, rustup's proxies beside cargo's bin, nvm, fnm's
// linked shell folders, sdkman's `current` link, a pipx link in ~/.local/bin, asdf's global
// version file, a project .venv made from a pyenv interpreter), built under a throwaway HOME
// and started through the spawn point's own command line with a real bwrap. What no toolchain
// needs stays out: a folder beside them, the home itself when it is on PATH, a hidden path
// inside a toolchain folder, a .venv that names some other folder.
//
// Each runs as the user running the suite; run as root, again as an ordinary user (uid 65534)
// in a world of its own, since bwrap started by root and by a user differ.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { confinedCommand, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { linkChain, toolchainView } from '../../../src/engine/spawn/toolchains.js';
import { type Policy, shippedPolicy } from '../../../src/policy/load.js';
import { SHARED_TMP } from '../../fixtures/env.js';
import { isRoot, marked, NOBODY } from '../../fixtures/sandboxed.js';

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
});

interface World {
  home: string;
  project: string;
  profile: string;
  env: Record<string, string>;
  uid: number;
}

function write(path: string, text: string, mode = 0o644): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text, { mode });
}

/** A program that says who it is, and where it found a file its toolchain keeps beside it. */
const program = (name: string, needs = '') => `#!/bin/sh\n${needs ? `cat "${needs}" >/dev/null || exit 9\n` : ''}echo "@ ${name}" "$@"\n`;

/** A throwaway HOME holding fake layouts of the version managers, and a PATH through them. */
function world(t: any, uid: number): World {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-toolchains-')));
  chmodSync(root, 0o755);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const project = join(root, 'work', 'app');
  const profile = join(home, '.local', 'share', 'shadowcode');
  mkdirSync(project, { recursive: true });
  mkdirSync(profile, { recursive: true, mode: 0o700 });
  // pyenv: a shim that runs pyenv's own script, which reads the global version file and runs that version.
  write(join(home, '.pyenv/version'), '3.1.1\n');
  write(join(home, '.pyenv/libexec/pyenv'), `#!/bin/sh\nshift\nv=$(cat "${home}/.pyenv/version")\nexec "${home}/.pyenv/versions/$v/bin/$@"\n`, 0o755);
  write(join(home, '.pyenv/shims/fakepy'), `#!/bin/sh\nexec "${home}/.pyenv/libexec/pyenv" exec fakepy "$@"\n`, 0o755);
  write(join(home, '.pyenv/versions/3.1.1/bin/fakepy'), program('pyenv python 3.1.1', join(home, '.pyenv/versions/3.1.1/lib/stdlib.txt')), 0o755);
  write(join(home, '.pyenv/versions/3.1.1/lib/stdlib.txt'), 'os\n');
  // rustup: cargo's bin holds proxies that read rustup's settings and run the toolchain's program.
  write(join(home, '.rustup/settings.toml'), 'default_toolchain = "stable"\n');
  write(join(home, '.rustup/toolchains/stable/bin/fakecargo'), program('rustup stable cargo'), 0o755);
  write(join(home, '.cargo/bin/fakecargo'), `#!/bin/sh\ngrep -q stable "${home}/.rustup/settings.toml" || exit 8\nexec "${home}/.rustup/toolchains/stable/bin/fakecargo" "$@"\n`, 0o755);
  // nvm: the version's bin on PATH, its lib beside it.
  write(join(home, '.nvm/versions/node/v9.9.9/bin/fakenode'), program('nvm node 9.9.9', join(home, '.nvm/versions/node/v9.9.9/lib/node_modules/npm/package.json')), 0o755);
  write(join(home, '.nvm/versions/node/v9.9.9/lib/node_modules/npm/package.json'), '{}');
  // fnm: PATH names a per-shell link to the installation.
  write(join(home, '.local/share/fnm/node-versions/v8.8.8/installation/bin/fnmnode'), program('fnm node 8.8.8'), 0o755);
  mkdirSync(join(home, '.local/state/fnm_multishells'), { recursive: true });
  symlinkSync(join(home, '.local/share/fnm/node-versions/v8.8.8/installation'), join(home, '.local/state/fnm_multishells/42_1'));
  // sdkman: `current` is a link to the version; the program finds its lib through its own path.
  write(join(home, '.sdkman/candidates/java/17.0.1/bin/fakejava'), `#!/bin/sh\nd=$(dirname "$0")\ncat "$d/../lib/modules" >/dev/null || exit 7\necho "@ sdkman java 17"\n`, 0o755);
  write(join(home, '.sdkman/candidates/java/17.0.1/lib/modules'), 'java.base\n');
  symlinkSync('17.0.1', join(home, '.sdkman/candidates/java/current'));
  // pipx: ~/.local/bin holds a link into its venvs.
  write(join(home, '.local/share/pipx/venvs/tool/bin/pipxtool'), program('pipx tool'), 0o755);
  mkdirSync(join(home, '.local/bin'), { recursive: true });
  symlinkSync(join(home, '.local/share/pipx/venvs/tool/bin/pipxtool'), join(home, '.local/bin/pipxtool'));
  // asdf: its shims read the global version file in the home.
  write(join(home, '.tool-versions'), 'ruby 3.3.0\n');
  write(join(home, '.asdf/installs/ruby/3.3.0/bin/fakeruby'), program('asdf ruby 3.3.0'), 0o755);
  write(join(home, '.asdf/shims/fakeruby'), `#!/bin/sh\nv=$(sed -n 's/^ruby //p' "${home}/.tool-versions")\nexec "${home}/.asdf/installs/ruby/$v/bin/fakeruby" "$@"\n`, 0o755);
  // Named only by a variable: a JDK nowhere on PATH.
  write(join(home, 'jdks/21/bin/javac21'), program('javac 21'), 0o755);
  // A prefix of its own on PATH: bin beside lib, with a secret the policy hides.
  write(join(home, 'tools/bin/mytool'), program('my tool', join(home, 'tools/lib/data')), 0o755);
  write(join(home, 'tools/lib/data'), 'x');
  write(join(home, 'tools/keys.txt'), 'TOOLS-SECRET');
  // What no toolchain needs, the home's own files, and a secret path holding a program.
  write(join(home, 'private/notes.txt'), 'PRIVATE-NOTES');
  write(join(home, 'canary.txt'), 'HOME-CANARY');
  write(join(home, '.ssh/bin/sshtool'), program('ssh tool'), 0o755);
  write(join(home, '.ssh/id_ed25519'), 'SSH-KEY', 0o600);
  const path = [
    join(home, '.pyenv/shims'), join(home, '.cargo/bin'), join(home, '.nvm/versions/node/v9.9.9/bin'), join(home, '.local/state/fnm_multishells/42_1/bin'),
    join(home, '.sdkman/candidates/java/current/bin'), join(home, '.local/bin'), join(home, '.asdf/shims'), join(home, 'tools/bin'), join(home, '.ssh/bin'),
    home, '/usr/local/bin', '/usr/bin', '/bin',
  ].join(':');
  if (uid !== (process.getuid?.() ?? -1)) chownTree(root, uid);
  return { home, project, profile, uid, env: { PATH: path, HOME: home, JAVA_HOME: join(home, 'jdks/21') } };
}

function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) chownTree(p, uid);
    else chownSync(p, uid, uid);
  }
}

/** The hidden list, with one more path: the test's tools folder's key file. */
function policyHiding(extra: string[]): Policy {
  const base = shippedPolicy();
  return { ...base, sandbox: { ...base.sandbox, hidden: [...base.sandbox.hidden, ...extra] } };
}

/** Starts `sh -c script` the way the spawn point does for a command of this world's project, as its user. */
async function run(t: any, w: World, script: string, policy: Policy = shippedPolicy()): Promise<{ code: number | null; out: string }> {
  const bwrap = sandboxSupport().bwrap as string;
  const c = confinedCommand({ argv: ['sh', '-c', script], cwd: w.project, env: w.env, confine: { project: w.project, network: false }, trustedArgv: false, policy }, bwrap, w.profile, w.uid);
  const me = process.getuid?.() ?? -1;
  const child = spawn(c.argv[0] as string, c.argv.slice(1), { cwd: w.project, env: c.env, stdio: ['ignore', 'pipe', 'pipe'], ...(w.uid !== me ? { uid: w.uid, gid: w.uid } : {}) });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  c.release();
  t.comment(out);
  return { code, out };
}

const users: Array<[string, number]> = [[isRoot ? 'root' : 'an ordinary user', process.getuid?.() ?? -1], ...(isRoot ? ([['an ordinary user (uid 65534, started by root)', NOBODY]] as Array<[string, number]>) : [])];

for (const [who, uid] of users) {
  t.test(`as ${who}, a command and what it starts find each version manager's programs as they are found outside`, async (t) => {
    const w = world(t, uid);
    const tools = ['fakepy one', 'fakecargo two', 'fakenode', 'fnmnode', 'fakejava', 'pipxtool', 'fakeruby', 'mytool', '"$JAVA_HOME/bin/javac21"'];
    // Through a shell and a second shell, as make or an npm script would start them.
    const r = await run(t, w, tools.map((c) => `sh -c '${c.replace(/'/g, '')}' || echo "@ failed: ${c.replace(/"/g, '')}"`).join('; '));
    t.equal(r.code, 0, r.out);
    t.strictSame(marked(r.out), ['pyenv python 3.1.1 one', 'rustup stable cargo two', 'nvm node 9.9.9', 'fnm node 8.8.8', 'sdkman java 17', 'pipx tool', 'asdf ruby 3.3.0', 'my tool', 'javac 21'], r.out);
  });

  t.test(`as ${who}, what no toolchain needs stays hidden: the home on PATH is not shown whole, nor a hidden path on PATH or inside a toolchain`, async (t) => {
    const w = world(t, uid);
    const script = [
      `cat ${w.home}/canary.txt 2>/dev/null && echo "@ READ the home" || echo "@ no home file"`,
      `cat ${w.home}/private/notes.txt 2>/dev/null && echo "@ READ private" || echo "@ no private notes"`,
      `cat ${w.home}/.ssh/id_ed25519 2>/dev/null && echo "@ READ the key" || echo "@ no ssh key"`,
      `sshtool 2>/dev/null || echo "@ no program from a hidden folder"`,
      `cat ${w.home}/tools/keys.txt 2>/dev/null && echo "@ READ the tools key" || echo "@ no tools key"`,
      `ls -A ${w.home}/tools | sed "s/^/@ tools holds /"`,
      `touch ${w.home}/.pyenv/version 2>/dev/null && echo "@ WROTE pyenv" || echo "@ pyenv is read-only"`,
      `ls ${w.profile} 2>/dev/null | sed "s/^/@ the profile holds /"; echo "@ end"`,
    ].join('; ');
    const r = await run(t, w, script, policyHiding(['~/tools/keys.txt']));
    t.strictSame(marked(r.out), ['no home file', 'no private notes', 'no ssh key', 'no program from a hidden folder', 'no tools key', 'tools holds bin', 'tools holds keys.txt', 'tools holds lib', 'pyenv is read-only', 'end'], r.out);
    t.notMatch(r.out, /HOME-CANARY|PRIVATE-NOTES|SSH-KEY|TOOLS-SECRET/);
  });
}

t.test('a hidden path made since the last start, a link into a toolchain, is covered where it leads at the next start', async (t) => {
  const w = world(t, process.getuid?.() ?? -1);
  // ~/vault is hidden; it is not there at the first start. Then it is made: a link to a folder inside a toolchain that is shown.
  const policy = policyHiding(['~/vault']);
  const look = `cat ${w.home}/tools/vaultdir/secret 2>/dev/null && echo "@ READ the vault" || echo "@ no vault"; ls ${w.home}/tools/bin | sed "s/^/@ tools holds /"`;
  t.strictSame(marked((await run(t, w, look, policy)).out), ['no vault', 'tools holds mytool'], 'nothing there yet');
  mkdirSync(join(w.home, 'tools/vaultdir'));
  writeFileSync(join(w.home, 'tools/vaultdir/secret'), 'VAULT-SECRET');
  symlinkSync(join(w.home, 'tools/vaultdir'), join(w.home, 'vault'));
  const r = await run(t, w, look, policy);
  t.strictSame(marked(r.out), ['no vault', 'tools holds mytool'], 'covered where the new link leads');
  t.notMatch(r.out, /VAULT-SECRET/);
});

t.test("a project's .venv made from a pyenv interpreter runs without pyenv on PATH; one that names another folder shows nothing", async (t) => {
  const uid = process.getuid?.() ?? -1;
  const w = world(t, uid);
  w.env = { ...w.env, PATH: '/usr/bin:/bin' };
  mkdirSync(join(w.project, '.venv/bin'), { recursive: true });
  symlinkSync(join(w.home, '.pyenv/versions/3.1.1/bin/fakepy'), join(w.project, '.venv/bin/python'));
  writeFileSync(join(w.project, '.venv/pyvenv.cfg'), `home = ${join(w.home, '.pyenv/versions/3.1.1/bin')}\n`);
  const r = await run(t, w, '.venv/bin/python venv || echo "@ failed"');
  t.strictSame(marked(r.out), ['pyenv python 3.1.1 venv'], r.out);

  // The project is the task's to write: a pyvenv.cfg naming any other folder makes nothing visible.
  writeFileSync(join(w.project, '.venv/pyvenv.cfg'), `home = ${join(w.home, 'private')}\n`);
  rmSync(join(w.project, '.venv/bin/python'));
  symlinkSync(join(w.home, 'private/notes.txt'), join(w.project, '.venv/bin/python'));
  const r2 = await run(t, w, `cat ${w.home}/private/notes.txt 2>/dev/null && echo "@ READ" || echo "@ hidden"`);
  t.strictSame(marked(r2.out), ['hidden'], r2.out);
});

t.test('layouts are found from PATH and the environment, and a change in a PATH folder is seen at the next start', async (t) => {
  const w = world(t, process.getuid?.() ?? -1);
  const policy = shippedPolicy().sandbox;
  const v = toolchainView(w.env, policy, w.project, 4096);
  t.strictSame(v.layouts, ['asdf', 'cargo', 'fnm', 'fnm-shells', 'java', 'nvm', 'pipx', 'pyenv', 'sdkman', 'user-local'], 'the layouts in use');
  t.ok(v.read.includes(join(w.home, '.rustup')), "cargo's layout brings rustup's root");
  t.ok(v.read.includes(join(w.home, '.tool-versions')), "asdf's global version file");
  t.ok(v.read.includes(join(w.home, 'tools')), 'a bin beside a lib: its prefix');
  t.notOk(v.read.some((p) => p === w.home || w.home.startsWith(`${p}/`)), 'never the home or above');
  t.strictSame(linkChain(join(w.home, '.sdkman/candidates/java/current/bin')), [[join(w.home, '.sdkman/candidates/java/current'), '17.0.1']]);
  // A new pipx link in ~/.local/bin leading somewhere new: the folder changed, so it is looked at again.
  write(join(w.home, 'opt/other/bin/other'), program('other'), 0o755);
  symlinkSync(join(w.home, 'opt/other/bin/other'), join(w.home, '.local/bin/other'));
  const v2 = toolchainView(w.env, policy, w.project, 4096);
  t.ok(v2.read.includes(join(w.home, 'opt/other/bin')), 'the new link target is shown');
  t.equal(statSync(join(w.home, '.local/bin')).isDirectory(), true);
});

// The view is kept per process and looked at again when what it depends on changed. With PATH
// naming only system folders and the home, no PATH folder of its own says so: what the view
// looked for and did not find (a CARGO_HOME not made yet, a root's bin) must say it instead.
t.test('a long-lived process: a toolchain folder made between two starts is shown from the next one, also with only system folders on PATH', async (t) => {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-toolchains-late-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  mkdirSync(home);
  const policy = shippedPolicy().sandbox;
  const cargo = join(root, 'cargo');
  const env = { HOME: home, PATH: `/usr/bin:/bin:${home}`, CARGO_HOME: cargo };
  const first = toolchainView(env, policy, null, 4096);
  t.notOk(first.layouts.includes('cargo'), 'no CARGO_HOME yet: not in use');
  // Made after the first start (rustup's installer), in the same process.
  mkdirSync(join(cargo, 'bin'), { recursive: true });
  const second = toolchainView(env, policy, null, 4096);
  t.ok(second.layouts.includes('cargo'), 'the CARGO_HOME made since is in use');
  t.ok(second.read.includes(join(cargo, 'bin')), 'and its bin shown');
  // A layout in use whose root held no bin yet: the bin made later is shown too.
  rmSync(join(cargo, 'bin'), { recursive: true });
  const third = toolchainView(env, policy, null, 4096);
  t.notOk(third.read.includes(join(cargo, 'bin')), 'a bin removed is no longer shown');
  writeFileSync(join(cargo, 'config.toml'), '[net]\n');
  t.ok(toolchainView(env, policy, null, 4096).read.includes(join(cargo, 'config.toml')), "a root's file made later is shown");
  mkdirSync(join(cargo, 'bin'));
  t.ok(toolchainView(env, policy, null, 4096).read.includes(join(cargo, 'bin')), "a root's bin made later is shown");
  // The home's own layout (~/.pyenv), looked for in the home and absent at first.
  const pyenv = { HOME: home, PATH: '/usr/bin:/bin', PYENV_ROOT: join(home, '.pyenv') };
  t.notOk(toolchainView(pyenv, policy, null, 4096).layouts.includes('pyenv'));
  mkdirSync(join(home, '.pyenv', 'shims'), { recursive: true });
  t.ok(toolchainView(pyenv, policy, null, 4096).read.includes(join(home, '.pyenv')), 'a PYENV_ROOT made later is shown');
});

t.test("a toolchain variable's literal ~/x is passed over: no version manager's script expands it", async (t) => {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-toolchains-tilde-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  mkdirSync(join(home, '.pyenv', 'shims'), { recursive: true });
  mkdirSync(join(home, 'elsewhere', 'bin'), { recursive: true });
  const policy = shippedPolicy().sandbox;
  const v = toolchainView({ HOME: home, PATH: '/usr/bin:/bin', PYENV_ROOT: '~/.pyenv', CARGO_HOME: '~/elsewhere' }, policy, null, 4096);
  t.strictSame(v.layouts, [], 'neither is in use by its variable');
  t.strictSame(v.read, [], 'and nothing of the home is shown for them');
  const set = toolchainView({ HOME: home, PATH: '/usr/bin:/bin', PYENV_ROOT: join(home, '.pyenv') }, policy, null, 4096);
  t.strictSame(set.layouts, ['pyenv'], 'the same variable, absolute: in use');
});

// `npm run` and `npx` put a node_modules/.bin first on PATH: its links lead into the packages beside
// it, which load their own dependencies from there too. The folder is shown once, not a package each.
t.test('a node_modules/.bin on PATH shows its node_modules folder once, read-only, with the dependencies no link names', async (t) => {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-nmbin-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const modules = join(root, 'tools', 'node_modules');
  write(join(modules, 'pkg-a', 'bin', 'a.js'), program('a', join(modules, 'dep-c', 'index.js')), 0o755);
  write(join(modules, '@s', 'pkg-b', 'cli.js'), program('b'), 0o755);
  write(join(modules, 'dep-c', 'index.js'), '');
  mkdirSync(join(modules, '.bin'));
  symlinkSync('../pkg-a/bin/a.js', join(modules, '.bin', 'a'));
  symlinkSync('../@s/pkg-b/cli.js', join(modules, '.bin', 'b'));
  const home = join(root, 'home');
  mkdirSync(home);
  const policy = shippedPolicy();
  const view = toolchainView({ PATH: `${join(modules, '.bin')}:/usr/bin:/bin`, HOME: home }, policy.sandbox, null, policy.limits.sandbox.path_entries);
  t.ok(view.read.includes(modules), `the node_modules folder is shown: ${view.read.join(' ')}`);
  t.same(view.read.filter((p) => p.startsWith(`${modules}/`)), [], 'and nothing inside it apart');
});
