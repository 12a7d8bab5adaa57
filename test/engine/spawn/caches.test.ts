// The project's private package caches (src/engine/spawn/caches.ts) as the host fills them: a seeded
// cache (cargo's registry) gets what it lacks of the user's, and what a sandboxed command left
// in the private side (a link where a folder goes) is never written through.
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import t from 'tap';
import { aloneOf, cachePlan, cacheRoot } from '../../../src/engine/spawn/caches.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { absentInHome } from '../../../src/engine/spawn/state-paths.js';
import { BIN, cli, SHARED_TMP, sandbox } from '../../fixtures/env.js';

const policy = shippedPolicy();

function world(t: any) {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-caches-')));
  t.teardown(() => import('node:fs').then((fs) => fs.rmSync(root, { recursive: true, force: true })));
  const home = join(root, 'home');
  const project = join(root, 'project');
  const outside = join(root, 'outside');
  for (const d of [home, project, outside, join(home, '.cargo', 'registry', 'cache', 'reg'), join(home, '.cargo', 'registry', 'index')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, '.cargo', 'registry', 'cache', 'reg', 'a-1.0.crate'), 'a');
  const env = { HOME: home, PATH: '/usr/bin:/bin' };
  const plan = () => cachePlan(project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  return { home, project, outside, env, plan, priv: aloneOf(cacheRoot(project, env) as string, 'cargo-registry') };
}

t.test("the user's cargo registry fills the project's private one with what it lacks", async (t) => {
  const w = world(t);
  const p = w.plan();
  t.ok(p.binds.some((b) => b.name === 'cargo-registry' && b.at === join(w.home, '.cargo', 'registry') && b.private === w.priv), 'bound at the registry path, kept privately');
  t.ok(existsSync(join(w.priv, 'cache', 'reg', 'a-1.0.crate')), 'the crate the user had is there');
});

t.test('a link the sandbox left where a folder of the private cache goes is never written through', async (t) => {
  const w = world(t);
  w.plan();
  // Inside the sandbox the private registry is writable: swap a folder for a link to somewhere else.
  renameSync(join(w.priv, 'cache', 'reg'), join(w.priv, 'cache', 'reg.old'));
  symlinkSync(w.outside, join(w.priv, 'cache', 'reg'));
  // The user's cache changes, so the next start fills again.
  writeFileSync(join(w.home, '.cargo', 'registry', 'cache', 'reg', 'b-2.0.crate'), 'b');
  mkdirSync(join(w.home, '.cargo', 'registry', 'cache', 'other'));
  writeFileSync(join(w.home, '.cargo', 'registry', 'cache', 'other', 'c-3.0.crate'), 'c');
  w.plan();
  t.same(readdirSync(w.outside), [], 'nothing was copied through the link');
  t.ok(existsSync(join(w.priv, 'cache', 'other', 'c-3.0.crate')), 'the rest is still filled');
});

// XDG_CACHE_HOME: pip, uv, yarn and Go's build cache write under it when it is set, so the
// project's private cache must be where they look, or what they write is lost with the private home.
const at = (plan: ReturnType<typeof cachePlan>, name: string) => plan.binds.find((b) => b.name === name)?.at;

t.test('with XDG_CACHE_HOME in the home, pip, uv, yarn and Go keep their private caches where they look for them', async (t) => {
  const w = world(t);
  const xdg = join(w.home, 'xc');
  const env = { ...w.env, XDG_CACHE_HOME: xdg };
  const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  for (const name of ['pip', 'uv', 'yarn', 'go-build']) {
    t.equal(at(plan, name), join(xdg, name), `${name}: $XDG_CACHE_HOME/${name}`);
    t.equal(plan.binds.find((b) => b.name === name)?.from, `$XDG_CACHE_HOME/${name}`, `${name}: named by that entry`);
  }
  t.equal(at(plan, 'npm'), join(w.home, '.npm'), 'npm does not follow it');
  // The tool's own variable still comes first.
  const own = cachePlan(w.project, { ...env, PIP_CACHE_DIR: join(w.home, 'pc') }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  t.equal(at(own, 'pip'), join(w.home, 'pc'), 'PIP_CACHE_DIR before XDG_CACHE_HOME');
});

t.test('an XDG_CACHE_HOME outside the home gets no writable bind there: those caches are not kept', async (t) => {
  const w = world(t);
  const env = { ...w.env, XDG_CACHE_HOME: w.outside };
  const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  for (const name of ['pip', 'uv', 'yarn', 'go-build']) {
    t.equal(at(plan, name), undefined, `${name}: not bound`);
    t.same(plan.notKept?.find((n) => n.name === name), { name, path: join(w.outside, name), from: `$XDG_CACHE_HOME/${name}`, why: 'outside the home' }, `${name}: said not kept, and why`);
  }
  t.same(plan.binds.filter((b) => b.at.startsWith(`${w.outside}/`) && b.at !== b.private), [], 'nothing of the user bound at a path outside the home');
  for (const sys of ['/usr', '/etc', w.project]) {
    const p = cachePlan(w.project, { ...w.env, XDG_CACHE_HOME: sys }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
    t.equal(at(p, 'pip'), undefined, `XDG_CACHE_HOME=${sys}: pip not bound`);
  }
});

t.test('a relative XDG_CACHE_HOME is not a place: the caches stay at their usual paths', async (t) => {
  const w = world(t);
  const env = { ...w.env, XDG_CACHE_HOME: 'rel' };
  const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  t.equal(at(plan, 'pip'), join(w.home, '.cache', 'pip'));
  t.equal(at(plan, 'go-build'), join(w.home, '.cache', 'go-build'));
  t.ok(plan.binds.every((b) => b.at.startsWith('/')), 'every bind at an absolute path');
  t.equal(cacheRoot(w.project, env), cacheRoot(w.project, w.env), 'the caches folder is the default one');
});

// A literal `~` in a variable (a config with no shell to expand it: an MCP client's env block) is
// read as the tool reads it: npm, yarn 1 and pip take `~/x` as the home's x; the XDG rules, Go, uv
// and cargo never do, and there the entry is passed over like any relative value.
t.test("a variable's literal ~/x: the home's x only where the tool itself reads it so (npm, yarn, pip); passed over elsewhere", async (t) => {
  const w = world(t);
  const plan = (env: Record<string, string>) => cachePlan(w.project, { ...w.env, ...env }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  const xdg = plan({ XDG_CACHE_HOME: '~/xc' });
  t.equal(at(xdg, 'pip'), join(w.home, 'xc', 'pip'), 'pip expands it in XDG_CACHE_HOME: its cache is ~/xc/pip');
  t.equal(xdg.binds.find((b) => b.name === 'pip')?.from, '$XDG_CACHE_HOME/pip');
  for (const name of ['uv', 'yarn', 'go-build']) {
    t.equal(at(xdg, name), join(w.home, '.cache', name), `${name}: XDG_CACHE_HOME=~/xc passed over`);
    t.equal(xdg.binds.find((b) => b.name === name)?.from, `~/.cache/${name}`, `${name}: named by the ~ default`);
  }
  t.equal(cacheRoot(w.project, { ...w.env, XDG_CACHE_HOME: '~/xc' }), cacheRoot(w.project, w.env), 'the caches folder is the default one');
  const own = plan({ npm_config_cache: '~/npmc', YARN_CACHE_FOLDER: '~/yc', PIP_CACHE_DIR: '~/pc', UV_CACHE_DIR: '~/uvc', GOCACHE: '~/gc', CARGO_HOME: '~/ch', GRADLE_USER_HOME: '~/gh' });
  t.equal(at(own, 'npm'), join(w.home, 'npmc'), 'npm_config_cache=~/npmc: npm reads ~/npmc');
  t.equal(at(own, 'yarn'), join(w.home, 'yc'), 'YARN_CACHE_FOLDER=~/yc: yarn reads ~/yc');
  t.equal(at(own, 'pip'), join(w.home, 'pc'), 'PIP_CACHE_DIR=~/pc: pip reads ~/pc');
  t.equal(at(own, 'uv'), join(w.home, '.cache', 'uv'), 'UV_CACHE_DIR=~/uvc: passed over');
  t.equal(at(own, 'go-build'), join(w.home, '.cache', 'go-build'), 'GOCACHE=~/gc: passed over (Go refuses it)');
  t.equal(at(own, 'cargo-registry'), join(w.home, '.cargo', 'registry'), 'CARGO_HOME=~/ch: passed over');
  t.equal(own.binds.find((b) => b.name === 'gradle')?.user, join(w.home, '.gradle', 'caches'), 'GRADLE_USER_HOME=~/gh: passed over');
  t.ok(own.binds.every((b) => b.at.startsWith('/') && !b.at.includes('~')), 'no bind at a path with a ~ in it');
});

/** `shadowcode test -- sh -c SCRIPT` in a trusted project: real bwrap. */
/** The user's ~/.ssh with a key in it: what the attacks below try to reach. */
function sshWithKey(sb: ReturnType<typeof sandbox>): string {
  const ssh = join(sb.root, '.ssh');
  mkdirSync(ssh);
  writeFileSync(join(ssh, 'id_x'), 'secret\n');
  return ssh;
}

async function run(sb: ReturnType<typeof sandbox>, script: string) {
  const r = await cli(sb, ['--json', '--workspace', sb.project, 'test', '--yes', '--', 'sh', '-c', script]);
  return JSON.parse(r.stdout || '{}') as { passed: boolean; output_tail: string; discarded?: { count: number; paths: string[] } };
}

t.test("what a command writes under $XDG_CACHE_HOME/pip in the sandbox lands in the project's private pip cache and is there at the next start", async (t) => {
  const sb = sandbox('sc-xdg');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const xdg = join(sb.root, 'xc');
  sb.env = { ...sb.env, XDG_CACHE_HOME: xdg };
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const first = await run(sb, 'mkdir -p "$XDG_CACHE_HOME/pip/http" && echo kept > "$XDG_CACHE_HOME/pip/http/probe"');
  t.equal(first.passed, true, first.output_tail);
  const priv = join(cacheRoot(sb.project, sb.env) as string, 'pip');
  t.equal(readFileSync(join(priv, 'http', 'probe'), 'utf8'), 'kept\n', "in the project's private cache on the host");
  t.notOk(existsSync(join(xdg, 'pip', 'http', 'probe')), "not in the user's own");
  const next = await run(sb, 'cat "$XDG_CACHE_HOME/pip/http/probe"');
  t.equal(next.passed, true, next.output_tail);
  t.match(next.output_tail, /kept/, 'there at the next start');
});

// With PYTHONPYCACHEPREFIX in the private /tmp, every sandboxed python compiled everything it
// imported again (the stdlib's own bytecode beside its sources is not looked at under a prefix), and
// each command was told it had written a hundred files that were discarded.
t.test("a sandboxed python's bytecode is kept in the project's caches folder: the next start reuses it, none lands in the project, none is reported discarded", async (t) => {
  const sb = sandbox('sc-pyc');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  writeFileSync(join(sb.project, 'mod.py'), 'X = 1\n');
  const py = '/usr/bin/python3 -c "import mod, json, sys; print(chr(64), sys.pycache_prefix)"';
  const first = await run(sb, py);
  t.equal(first.passed, true, first.output_tail);
  const prefix = join(cacheRoot(sb.project, sb.env) as string, 'python-bytecode');
  t.match(first.output_tail, `@ ${prefix}`, "the prefix inside is the project's own cache");
  const pycOf = () => (readdirSync(join(prefix, sb.project)).find((n) => /^mod\.cpython-\d+\.pyc$/.test(n)));
  const pyc = pycOf();
  t.ok(pyc, "the project module's bytecode is kept there on the host");
  t.ok(readdirSync(prefix, { recursive: true }).some((n) => String(n).includes('json') && String(n).endsWith('.pyc')), "and the standard library's");
  t.notOk(existsSync(join(sb.project, '__pycache__')), 'none is written into the project');
  t.equal(first.discarded, undefined, 'nothing reported as discarded');
  const at = join(prefix, sb.project, pyc as string);
  const made = lstatSync(at).mtimeMs;
  const next = await run(sb, py);
  t.equal(next.passed, true, next.output_tail);
  t.equal(lstatSync(at).mtimeMs, made, 'the next start imports it as it is, without compiling again');
  t.equal(next.discarded, undefined, 'nothing reported as discarded then either');
});

t.test('with XDG_CACHE_HOME outside the home, what a command writes under it is neither kept nor written on the host', async (t) => {
  const sb = sandbox('sc-xdg-out');
  const outside = realpathSync(mkdtempSync('/var/tmp/sc-xdg-'));
  t.teardown(() => (rmSync(sb.root, { recursive: true, force: true }), rmSync(outside, { recursive: true, force: true })));
  sb.env = { ...sb.env, XDG_CACHE_HOME: outside };
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const r = await run(sb, 'mkdir -p "$XDG_CACHE_HOME/pip" && echo x > "$XDG_CACHE_HOME/pip/probe"; echo "@ $?"');
  t.equal(r.passed, true, r.output_tail);
  t.notOk(existsSync(join(outside, 'pip')), 'nothing written in the folder XDG_CACHE_HOME names on the host');
  const priv = join(cacheRoot(sb.project, sb.env) as string, 'pip');
  t.notOk(existsSync(join(priv, 'probe')), 'nor kept as the private pip cache');
  t.same(readdirSync(outside), ['shadowcode'], "only the project's caches folder is made there");
});

// bwrap finds a bind's source on the host at each start. A cache's private folder must never be
// something a command could have replaced: a link planted where it was would be followed there.
t.test("a link where a cache's private folder was is removed and a folder made again, never followed", async (t) => {
  const w = world(t);
  const first = w.plan();
  const git = first.binds.find((b) => b.name === 'cargo-git')?.private as string;
  t.ok(git, 'cargo-git has a private folder');
  const secret = join(w.outside, 'secret');
  mkdirSync(secret);
  for (const p of [git, w.priv]) {
    rmSync(p, { recursive: true, force: true });
    symlinkSync(secret, p);
  }
  writeFileSync(join(w.home, '.cargo', 'registry', 'cache', 'reg', 'b-2.0.crate'), 'b');
  const next = w.plan();
  for (const p of [git, w.priv]) t.ok(lstatSync(p).isDirectory(), `${p.slice(p.lastIndexOf('/') + 1)} is a folder again, not the link`);
  t.same(readdirSync(secret), [], 'nothing seeded through the link');
  t.ok(next.binds.every((b) => !b.private.startsWith(secret)), 'no bind from the link');
});

// The caches folder is shown read-write, once: a command can put a link where a cache's folder was.
// That link is followed only inside a sandbox, and the next start makes the folder again.
t.test("a command that swaps a cache's folder for a link to ~/.ssh reaches nothing there, now or at the next start", async (t) => {
  const sb = sandbox('sc-cache-swap');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const root = cacheRoot(sb.project, sb.env) as string;
  const ssh = join(sb.root, '.ssh');
  mkdirSync(ssh, { recursive: true });
  // What a build script might try: swap the folder for a link, and write through it.
  const r = await run(sb, `rm -rf "${root}/npm"; ln -s "${ssh}" "${root}/npm.x" && mv -T "${root}/npm.x" "${root}/npm"; echo "swapped $?"; echo x > ~/.npm/f; echo "wrote $?"`);
  t.match(r.output_tail, /swapped 0/, `the caches folder is the project's to write: ${r.output_tail}`);
  t.match(r.output_tail, /wrote [1-9]/, 'the link leads nowhere inside: the home there is private');
  t.same(readdirSync(ssh), [], 'nothing reached ~/.ssh');
  const next = await run(sb, 'echo y > ~/.npm/g && cat ~/.npm/g');
  t.equal(next.passed, true, next.output_tail);
  t.ok(lstatSync(join(root, 'npm')).isDirectory(), 'the next start made the folder again instead of following the link');
  t.equal(readFileSync(join(root, 'npm', 'g'), 'utf8'), 'y\n', "what it wrote through ~/.npm is in the project's npm folder");
  t.same(readdirSync(ssh), [], 'and still nothing in ~/.ssh');
});

// Where a cache's path lies in a folder shown read-only (pnpm's store inside PNPM_HOME, on PATH), no link
// can be made there: the cache is bound on its own, from a folder no start shows whole.
t.test("a cache inside a read-only toolchain folder is bound from its own folder, which no command can swap", async (t) => {
  const sb = sandbox('sc-cache-alone');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const pnpmHome = join(sb.root, '.local', 'share', 'pnpm');
  mkdirSync(join(pnpmHome, 'store'), { recursive: true });
  writeFileSync(join(pnpmHome, 'pnpm'), '#!/bin/sh\necho fake pnpm\n', { mode: 0o755 });
  sb.env = { ...sb.env, PATH: `${pnpmHome}:${sb.env.PATH}` };
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const root = cacheRoot(sb.project, sb.env) as string;
  const alone = join(`${root}.bound`, 'pnpm-store');
  const ssh = join(sb.root, '.ssh');
  mkdirSync(ssh, { recursive: true });
  const store = join(pnpmHome, 'store');
  const r = await run(sb, `pnpm; echo a > "${store}/a"; echo "store $?"; ls -a "${root}"; ls "${root}.bound" 2>&1; rm -rf "${root}/pnpm-store"; ln -s "${ssh}" "${root}/pnpm-store"; echo "swapped $?"`);
  t.match(r.output_tail, /fake pnpm/, `the toolchain folder is shown: ${r.output_tail}`);
  t.match(r.output_tail, /store 0/, 'the store inside it is writable');
  t.match(r.output_tail, /No such file/, 'the folder of caches bound on their own is not shown');
  t.equal(readFileSync(join(alone, 'a'), 'utf8'), 'a\n', 'what was written there is in its own folder');
  t.same(readdirSync(store), [], "the user's store is untouched");
  const next = await run(sb, `cat "${store}/a"; echo b > "${store}/b"`);
  t.equal(next.passed, true, next.output_tail);
  t.match(next.output_tail, /^a$/m, 'the next start binds the same folder');
  t.equal(readFileSync(join(alone, 'b'), 'utf8'), 'b\n');
  t.same(readdirSync(ssh), [], 'nothing reached ~/.ssh');
});

// pnpm keeps its store in its home folder: $PNPM_HOME/store when that is set (kept inside the sandbox).
t.test('pnpm with PNPM_HOME set keeps the project\'s private store at $PNPM_HOME/store, where pnpm looks', async (t) => {
  const w = world(t);
  const pnpmHome = join(w.home, 'pn');
  const plan = cachePlan(w.project, { ...w.env, PNPM_HOME: pnpmHome }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  const store = plan.binds.find((b) => b.name === 'pnpm-store');
  t.equal(store?.at, join(pnpmHome, 'store'), 'at $PNPM_HOME/store');
  t.equal(store?.from, '$PNPM_HOME/store', 'named by that entry');
  const plain = cachePlan(w.project, w.env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { dry: true });
  t.equal(plain.binds.find((b) => b.name === 'pnpm-store')?.at, join(w.home, '.local', 'share', 'pnpm', 'store'), 'without it, pnpm\'s default');
});

// The seeded cache is filled on the host, path by path, while another sandbox of the same project (a
// background server, a watcher) may be running with the caches folder read-write. Each level is
// checked before it is written, but the check and the write are two lookups: a folder swapped for a
// link in between is followed on the host, where the link leads into the user's own files.
t.test('a sandbox running meanwhile cannot make the host fill the seeded cache through a link it swaps in', async (t) => {
  const sb = sandbox('sc-cache-race');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const registry = join(sb.root, '.cargo', 'registry');
  mkdirSync(join(registry, 'index'), { recursive: true });
  // A registry of some size, as a user's is: the fill takes a while.
  for (let d = 0; d < 40; d++) {
    mkdirSync(join(registry, 'cache', `reg${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(registry, 'cache', `reg${d}`, `c${f}-1.0.crate`), 'c');
  }
  const ssh = join(sb.root, '.ssh');
  mkdirSync(ssh);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const first = await run(sb, 'true');
  t.equal(first.passed, true, first.output_tail);
  const priv = aloneOf(cacheRoot(sb.project, sb.env) as string, 'cargo-registry');
  t.ok(existsSync(join(priv, 'cache', 'reg0', 'c0-1.0.crate')), 'seeded at the first start');
  // The background sandbox: keeps every folder of the private registry it sees (at ~/.cargo/registry, a
  // mount point itself) swapped for a link to ~/.ssh, the host's path, until told to stop.
  const loop = `touch "${sb.project}/ready"; n=0; c="$HOME/.cargo/registry/cache"; while ! [ -e "${sb.project}/stop" ]; do for d in "$c"/*; do case "$d" in *.o*) continue;; esac; if [ -d "$d" ] && ! [ -L "$d" ]; then n=$((n+1)); mv "$d" "$d.o$n" 2>/dev/null; ln -s "${ssh}" "$d"; fi; done; done; echo "swaps $n"`;
  const a = spawn(process.execPath, [BIN, '--json', '--workspace', sb.project, 'test', '--yes', '--', 'sh', '-c', loop], { env: sb.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let aOut = '';
  a.stdout.on('data', (b) => (aOut += b));
  const aDone = new Promise((r) => a.on('close', r));
  t.teardown(() => a.kill());
  for (let i = 0; i < 300 && !existsSync(join(sb.project, 'ready')); i++) await new Promise((r) => setTimeout(r, 100));
  t.ok(existsSync(join(sb.project, 'ready')), 'the background sandbox runs');
  // The user fetches a crate outside the sandbox: the next start fills the private registry again.
  mkdirSync(join(registry, 'cache', 'new'));
  writeFileSync(join(registry, 'cache', 'new', 'n-1.0.crate'), 'n');
  const next = await run(sb, 'true');
  writeFileSync(join(sb.project, 'stop'), '');
  await aDone;
  t.equal(next.passed, true, next.output_tail);
  t.match(aOut, /swaps [1-9]/, 'the background sandbox did swap the folder for a link');
  t.same(readdirSync(ssh), [], "nothing of the user's registry was copied into ~/.ssh");
});

// The caches folder must lie outside the project: checked by the path as written, but ~/.cache may be
// a link whose real folder is in the project (a cache kept on the work disk). Then the sandbox shows
// that folder read-write through the project, and bwrap follows what a command put there.
t.test("a caches folder whose real path lies in the project is not used: a command cannot swap it for a link to the home", async (t) => {
  const sb = sandbox('sc-cache-in-project');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const kept = join(sb.project, 'cachedir');
  mkdirSync(kept);
  symlinkSync(kept, join(sb.root, '.cache'));
  const ssh = sshWithKey(sb);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const root = cacheRoot(sb.project, sb.env) as string;
  const seen = join(kept, 'shadowcode', 'sandbox', root.slice(root.lastIndexOf('/') + 1));
  const r = await run(sb, `[ -d "${seen}" ] && mv "${seen}" "${seen}.old" && ln -s "${sb.root}" "${seen}"; echo "swapped $?"`);
  t.equal(r.passed, true, r.output_tail);
  t.match(r.output_tail, /swapped 1/, 'the caches folder is never made there: the caches are not kept');
  const next = await run(sb, `cat "${root}/.ssh/id_x"; echo "read $?"`);
  t.match(next.output_tail, /read [0-9]/, `the next start ran: ${next.output_tail}`);
  t.notMatch(next.output_tail, /secret/, `~/.ssh is not shown through the caches folder: ${next.output_tail}`);
});

// The folders beside the caches folder (the seed stamps, <hash>.bound) and the caches folder itself are
// named by the host at every start. A writable grant of ~/.cache (as `sandbox allow ~/.cache/app-data --write`,
// one level up) shows them as the host's own: a command can swap each for a link.
t.test('with ~/.cache granted writable, a command cannot make the host write through a link it left for the seed stamp or the caches folder', async (t) => {
  const sb = sandbox('sc-cache-grant');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const registry = join(sb.root, '.cargo', 'registry');
  mkdirSync(join(registry, 'index'), { recursive: true });
  mkdirSync(join(registry, 'cache', 'reg'), { recursive: true });
  writeFileSync(join(registry, 'cache', 'reg', 'a-1.0.crate'), 'a');
  const rc = join(sb.root, '.bashrc');
  writeFileSync(rc, 'alias ll="ls -l"\n');
  mkdirSync(join(sb.root, '.cache'));
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  // Kept and seeded before the grant: the caches folder, its cache folders and the stamps are there.
  t.equal((await run(sb, 'true')).passed, true);
  const root = cacheRoot(sb.project, sb.env) as string;
  const alone = `${root}.bound`;
  const stamp = `${aloneOf(root, 'cargo-registry')}.seeded`;
  t.ok(existsSync(stamp), 'the seeded cache has its stamp');
  t.equal((await cli(sb, ['--workspace', sb.project, 'sandbox', 'allow', '--write', join(sb.root, '.cache')])).code, 0);
  const before = readdirSync(sb.root).sort();
  const r = await run(sb, `rm "${stamp}" && ln -s "${rc}" "${stamp}" && mv "${root}" "${root}.old" && ln -s "${sb.root}" "${root}" && mv "${alone}" "${alone}.old" && ln -s "${sb.root}" "${alone}"; echo "swapped $?"`);
  t.match(r.output_tail, /swapped 0/, r.output_tail);
  // The user fetches a crate outside the sandbox: the next start fills the private registry again.
  writeFileSync(join(registry, 'cache', 'reg', 'b-1.0.crate'), 'b');
  await run(sb, 'true');
  t.equal(readFileSync(rc, 'utf8'), 'alias ll="ls -l"\n', '~/.bashrc is not overwritten with the seed stamp');
  t.same(readdirSync(sb.root).sort(), before, 'no cache folder is made or filled in the home');
});

// the real path of the caches folder is checked once, at the end of the links on the way; a
// link on the way that lies in the project (~/.cache ─► project/cachedir) is the project's to change. A
// command that makes the caches folder there a link to the home (rather than moving a folder it never
// gets) passes the check: its real path, the home, lies outside the project.
t.test('a command that plants the caches folder as a link to the home, under a ~/.cache that leads into the project, gets no view of the home', async (t) => {
  const sb = sandbox('sc-cache-plant');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const kept = join(sb.project, 'cachedir');
  mkdirSync(kept);
  symlinkSync(kept, join(sb.root, '.cache'));
  const ssh = sshWithKey(sb);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const root = cacheRoot(sb.project, sb.env) as string;
  const seen = join(kept, 'shadowcode', 'sandbox', root.slice(root.lastIndexOf('/') + 1));
  const r = await run(sb, `mkdir -p "${join(kept, 'shadowcode', 'sandbox')}" && rm -rf "${seen}" && ln -s "${sb.root}" "${seen}"; echo "planted $?"`);
  t.match(r.output_tail, /planted 0/, `the project is the command's to write: ${r.output_tail}`);
  const next = await run(sb, `cat "${root}/.ssh/id_x"; echo "read $?"; echo pwned > "${root}/.bashrc"; echo "wrote $?"`);
  t.match(next.output_tail, /read [0-9]/, `the next start ran: ${next.output_tail}`);
  t.notMatch(next.output_tail, /secret/, `~/.ssh is not shown through the caches folder: ${next.output_tail}`);
  t.notOk(existsSync(join(sb.root, '.bashrc')), 'nothing written in the home through the caches folder');
  t.notOk(existsSync(join(sb.root, 'npm')), 'no cache folder made in the home');
});

// the same through a folder granted writable (a work disk the user's ~/.cache leads into).
t.test('under a ~/.cache that leads into a folder granted writable, a command that plants the caches folder as a link to the home gets no view of it', async (t) => {
  const sb = sandbox('sc-cache-plant-grant');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const disk = join(sb.root, 'disk');
  const kept = join(disk, 'cachedir');
  mkdirSync(kept, { recursive: true });
  symlinkSync(kept, join(sb.root, '.cache'));
  const ssh = sshWithKey(sb);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  t.equal((await cli(sb, ['--workspace', sb.project, 'sandbox', 'allow', '--write', disk])).code, 0);
  const root = cacheRoot(sb.project, sb.env) as string;
  const seen = join(kept, 'shadowcode', 'sandbox', root.slice(root.lastIndexOf('/') + 1));
  const r = await run(sb, `mkdir -p "${join(kept, 'shadowcode', 'sandbox')}" && rm -rf "${seen}" && ln -s "${sb.root}" "${seen}"; echo "planted $?"`);
  t.match(r.output_tail, /planted 0/, `the granted folder is the command's to write: ${r.output_tail}`);
  const next = await run(sb, `cat "${root}/.ssh/id_x"; echo "read $?"`);
  t.match(next.output_tail, /read [0-9]/, `the next start ran: ${next.output_tail}`);
  t.notMatch(next.output_tail, /secret/, `~/.ssh is not shown through the caches folder: ${next.output_tail}`);
});

// the seed is read from the user's registry by path, and its seed folders are listed through
// whatever is at their name. Where a command can write the user's registry (~/.cargo granted writable,
// for a `cargo install`), it leaves a link there: the host copies what it leads to into the project's
// private registry, which every later start shows.
t.test("a link a command left in the user's registry (~/.cargo granted writable) never makes the host copy what it leads to into the private registry", async (t) => {
  const sb = sandbox('sc-cache-seedlink');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const cargo = join(sb.root, '.cargo');
  const registry = join(cargo, 'registry');
  mkdirSync(join(registry, 'index'), { recursive: true });
  mkdirSync(join(registry, 'cache', 'reg'), { recursive: true });
  writeFileSync(join(registry, 'cache', 'reg', 'a-1.0.crate'), 'a');
  const ssh = sshWithKey(sb);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  t.equal((await cli(sb, ['--workspace', sb.project, 'sandbox', 'allow', '--write', cargo])).code, 0);
  const r = await run(sb, `rm -rf "${registry}/cache" && ln -s "${ssh}" "${registry}/cache"; echo "planted $?"`);
  t.match(r.output_tail, /planted 0/, `the granted folder is the command's to write: ${r.output_tail}`);
  t.equal((await run(sb, 'true')).passed, true, 'a start seeds the private registry');
  t.equal((await cli(sb, ['--workspace', sb.project, 'sandbox', 'revoke', cargo])).code, 0);
  const next = await run(sb, `cat ~/.cargo/registry/cache/id_x; echo "read $?"`);
  t.notMatch(next.output_tail, /secret/, `~/.ssh was not copied into the private registry: ${next.output_tail}`);
  t.notOk(existsSync(join(aloneOf(cacheRoot(sb.project, sb.env) as string, 'cargo-registry'), 'cache', 'id_x')), 'nor is it on the host');
});

// the same without a grant, where the user's registry really lies in the project (~/.cargo a
// link into it, as ~/.cache above): the seed source is checked by the path as written only.
t.test("under a ~/.cargo that leads into the project, a link a command left in the registry never makes the host copy what it leads to", async (t) => {
  const sb = sandbox('sc-cache-seedproj');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  const kept = join(sb.project, 'dotcargo');
  const registry = join(kept, 'registry');
  mkdirSync(join(registry, 'index'), { recursive: true });
  mkdirSync(join(registry, 'cache', 'reg'), { recursive: true });
  writeFileSync(join(registry, 'cache', 'reg', 'a-1.0.crate'), 'a');
  symlinkSync(kept, join(sb.root, '.cargo'));
  const ssh = sshWithKey(sb);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const r = await run(sb, `rm -rf "${registry}/cache" && ln -s "${ssh}" "${registry}/cache"; echo "planted $?"`);
  t.match(r.output_tail, /planted 0/, `the project is the command's to write: ${r.output_tail}`);
  const next = await run(sb, `cat ~/.cargo/registry/cache/id_x; echo "read $?"`);
  t.notMatch(next.output_tail, /secret/, `~/.ssh was not copied into the private registry: ${next.output_tail}`);
  t.notOk(existsSync(join(aloneOf(cacheRoot(sb.project, sb.env) as string, 'cargo-registry'), 'cache', 'id_x')), 'nor is it on the host');
});

// A ~/.cache that leads nowhere (a disk not mounted) is the user's to mend; the command still runs,
// its caches not kept, rather than every sandboxed start failing on a folder that cannot be made.
t.test('a ~/.cache that is a dangling link does not stop a sandboxed command: its caches are not kept', async (t) => {
  const sb = sandbox('sc-cache-dangling');
  t.teardown(() => rmSync(sb.root, { recursive: true, force: true }));
  symlinkSync(join(sb.root, 'unmounted', 'cache'), join(sb.root, '.cache'));
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust'])).code, 0);
  const r = await run(sb, 'mkdir -p ~/.npm && echo x > ~/.npm/f; echo "ran $?"');
  t.equal(r.passed, true, r.output_tail);
  t.match(r.output_tail, /ran 0/, 'the command ran, npm writing in its private home');
  t.notOk(existsSync(join(sb.root, 'unmounted')), 'nothing made where the link leads');
});

// Another local user must not be able to change the caches folder or a folder above it either: a
// folder of theirs, or one anyone may write in without the sticky bit, lets them swap a folder for a
// link between the host's checks and bwrap's bind.
t.test('no cache is kept where another user could change a folder on the way to the caches folder; a sticky one like /tmp is fine', async (t) => {
  const w = world(t);
  const open = join(w.home, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const env = { ...w.env, XDG_CACHE_HOME: join(open, 'cache') };
  const plan = () => cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  const folder = cacheRoot(w.project, env);
  const refused = plan();
  t.same(refused.binds, [], 'no cache bound');
  t.same(refused.refused, { folder, why: 'another user can change it', at: open }, 'said why, and where');
  t.notOk(existsSync(join(open, 'cache')), 'nothing made there');
  // Reached through a link of the user's own: the folders it leads through decide.
  symlinkSync(open, join(w.home, 'via'));
  const viaEnv = { ...w.env, XDG_CACHE_HOME: join(w.home, 'via', 'cache') };
  const via = cachePlan(w.project, viaEnv, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  t.same(via.binds, [], 'not through a link either');
  t.equal(via.refused?.at, open, 'the folder the link leads to is named');
  // With the sticky bit others cannot rename what is not theirs: the caches are kept.
  chmodSync(open, 0o1777);
  const kept = plan();
  t.ok(kept.binds.some((b) => b.name === 'pip'), 'kept under a sticky folder');
  t.equal(kept.refused, undefined, 'nothing refused');
  t.equal(w.plan().refused, undefined, 'nor in an ordinary home');
  // Only root can give a folder to another user; CI runs as root.
  if (process.getuid?.() === 0) {
    // A folder another user owns (here a uid no one has).
    const theirs = join(w.home, 'theirs');
    mkdirSync(theirs, { mode: 0o755 });
    chownSync(theirs, 4242, 4242);
    const other = cachePlan(w.project, { ...w.env, XDG_CACHE_HOME: join(theirs, 'cache') }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
    t.same(other.binds, [], "root keeps no cache under another user's folder");
    t.equal(other.refused?.at, theirs, 'that folder is named');
  }
});

// A link on the way is itself an entry of the folder it lies in: whoever may change that folder
// can point the link elsewhere between the host's checks and bwrap's bind, also when the link is
// reached through another link and neither folder is on the way to where it all ends up.
t.test('no cache is kept where a link on the way lies in a folder others may change, even one reached only through another link', async (t) => {
  const w = world(t);
  const shared = join(w.outside, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  const target = join(w.home, 'target');
  mkdirSync(target);
  symlinkSync(target, join(shared, 'hop'));
  symlinkSync(join(shared, 'hop'), join(w.home, 'via'));
  const env = { ...w.env, XDG_CACHE_HOME: join(w.home, 'via', 'cache') };
  const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  t.same(plan.binds, [], 'no cache bound');
  t.same(plan.refused, { folder: cacheRoot(w.project, env), why: 'another user can change it', at: shared }, 'the folder holding the link is named');
  // A relative link's steps count the same way.
  symlinkSync('../outside/shared/hop', join(w.home, 'rel'));
  const relEnv = { ...w.env, XDG_CACHE_HOME: join(w.home, 'rel', 'cache') };
  const rel = cachePlan(w.project, relEnv, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  t.same(rel.binds, [], 'not through a relative link either');
  t.equal(rel.refused?.at, shared, 'that folder is named');
  // The same links through a folder of the user's own: kept.
  chmodSync(shared, 0o755);
  t.ok(cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []).binds.length > 0, 'kept once that folder is no longer open to others');
});

t.test("no cache is kept where others may change the caches folder's .bound sibling (seeded caches are bound from there)", async (t) => {
  const w = world(t);
  const root = cacheRoot(w.project, w.env) as string;
  // Its parent as /tmp is: sticky, so others may make names there but not move ours.
  mkdirSync(dirname(root), { recursive: true });
  chmodSync(dirname(root), 0o1777);
  t.ok(w.plan().binds.some((b) => b.name === 'cargo-registry'), 'kept while the .bound folder is ours');
  chmodSync(`${root}.bound`, 0o777);
  const open = w.plan();
  t.same(open.binds, [], 'none kept once others may write in it');
  t.equal(open.refused?.at, `${root}.bound`, 'that folder is named');
  if (process.getuid?.() === 0) {
    chmodSync(`${root}.bound`, 0o755);
    chownSync(`${root}.bound`, 4242, 4242);
    const theirs = w.plan();
    t.same(theirs.binds, [], "none kept in another user's .bound folder");
    t.equal(theirs.refused?.at, `${root}.bound`, 'that folder is named');
  }
});

/** A folder as /tmp is (sticky, open to all) in `outside`, which is made searchable for other users with its parent. */
function stickyFolder(outside: string): string {
  for (const d of [dirname(outside), outside]) chmodSync(d, 0o755);
  const sticky = join(outside, 'tmp');
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  return sticky;
}

t.test('a folder on the way made by another user after the check but before the caches folder is made: no cache is kept', async (t) => {
  const w = world(t);
  // Where another user can reach it: the test's folders are searchable, the last one is as /tmp is.
  const sticky = stickyFolder(w.outside);
  const later = join(sticky, 'cache');
  const env = { ...w.env, XDG_CACHE_HOME: later };
  const real = absentInHome(w.home);
  let raced = false;
  // The home's listing is asked once per cache, after the folders on the way were looked at and
  // before the first one is made: where another user's mkdir can land.
  const look = Object.assign((p: string) => {
    if (!raced) {
      raced = true;
      const root = process.getuid?.() === 0;
      const r = spawnSync('mkdir', ['-m', root ? '0755' : '0777', later], root ? { uid: 4242, gid: 4242 } : {});
      t.equal(r.status, 0, `mkdir ${later} by ${root ? 'uid 4242' : 'this user, open to all'}`);
    }
    return real(p);
  }, { made: real.made });
  const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, [], { look });
  t.ok(raced, 'the other mkdir ran during the plan');
  t.same(plan.binds, [], 'no cache bound under a folder someone else made');
  t.same(plan.refused, { folder: cacheRoot(w.project, env), why: 'another user can change it', at: later }, 'that folder is named');
});

// In a sticky folder (/tmp) others cannot move what is ours, but a link there that another user
// made is theirs to replace: where the kernel follows it (fs.protected_symlinks off), it decides.
t.test("no cache is kept where the way goes through another user's link in a sticky folder", async (t) => {
  const w = world(t);
  const sticky = stickyFolder(w.outside);
  const target = join(w.home, 'target');
  mkdirSync(target);
  // Through a link of the user's own in that folder: kept.
  const mine = join(sticky, 'mine');
  symlinkSync(target, mine);
  t.ok(cachePlan(w.project, { ...w.env, XDG_CACHE_HOME: join(mine, 'cache') }, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []).binds.length > 0, 'kept through a link of our own');
  // Only root can make a link as another user; CI runs as root.
  if (process.getuid?.() === 0) {
    const hop = join(sticky, 'hop');
    const r = spawnSync('ln', ['-s', target, hop], { uid: 4242, gid: 4242 });
    t.equal(r.status, 0, `ln -s as uid 4242: ${r.stderr}`);
    t.equal(lstatSync(hop).uid, 4242, "the link is the other user's");
    const env = { ...w.env, XDG_CACHE_HOME: join(hop, 'cache') };
    const plan = cachePlan(w.project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
    t.same(plan.binds, [], 'no cache bound');
    t.same(plan.refused, { folder: cacheRoot(w.project, env), why: 'another user can change it', at: hop }, 'the link is named');
  }
});

// A link that lies in the project is the project's to change, also when neither the path as
// written nor where it all ends up is in the project (~/.cache ─► project/hop ─► ~/cachedir): a
// sandbox of the project running meanwhile may point it elsewhere between the checks and the bind.
t.test('no cache is kept where the way to the caches folder passes through a link that lies in the project', async (t) => {
  const w = world(t);
  const real = join(w.home, 'cachedir');
  mkdirSync(real);
  symlinkSync(real, join(w.project, 'hop'));
  symlinkSync(join(w.project, 'hop'), join(w.home, '.cache'));
  const plan = w.plan();
  t.same(plan.binds, [], 'no cache bound');
  t.equal(plan.refused?.why, 'a sandbox can change it', 'said why');
  t.equal(plan.refused?.at, w.project, 'the folder the link lies in is named');
  t.same(readdirSync(real), [], 'nothing made where it leads');
  // The same way with the middle link outside the project: kept.
  rmSync(join(w.project, 'hop'));
  symlinkSync(real, join(w.outside, 'hop'));
  rmSync(join(w.home, '.cache'));
  symlinkSync(join(w.outside, 'hop'), join(w.home, '.cache'));
  t.ok(w.plan().binds.length > 0, 'kept through links outside the project');
});

// The seed's source the same way: a link in the middle that lies in the project is the project's
// to point elsewhere while the host copies (~/.cargo ─► project/hop ─► ~/realcargo).
t.test("the private registry is not filled from a user's registry reached through a link that lies in the project", async (t) => {
  const w = world(t);
  const realCargo = join(w.home, 'realcargo');
  renameSync(join(w.home, '.cargo'), realCargo);
  symlinkSync(realCargo, join(w.project, 'hop'));
  symlinkSync(join(w.project, 'hop'), join(w.home, '.cargo'));
  const p = w.plan();
  t.ok(p.binds.some((b) => b.name === 'cargo-registry'), 'the private registry is still bound');
  t.notOk(existsSync(join(w.priv, 'cache', 'reg', 'a-1.0.crate')), 'but nothing was copied into it');
  // Through links outside the project it is filled.
  rmSync(join(w.project, 'hop'));
  symlinkSync(realCargo, join(w.outside, 'hop'));
  rmSync(join(w.home, '.cargo'));
  symlinkSync(join(w.outside, 'hop'), join(w.home, '.cargo'));
  w.plan();
  t.ok(existsSync(join(w.priv, 'cache', 'reg', 'a-1.0.crate')), 'filled once the way is the user\'s alone');
});
