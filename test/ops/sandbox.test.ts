// Sandbox grants as the user manages them: sandbox allow, revoke and show through the CLI,
// kept in the profile (never the project), each change a gate decision with its outcome in
// the audit log; the profile and the project's protected paths are never granted, a hidden
// secret path only with --secret.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { allow } from '../../src/ops/sandbox.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { readAudit } from '../../src/store/audit.js';
import { openDb } from '../../src/store/db.js';
import { cli, type Sandbox, sandbox } from '../fixtures/env.js';

const ws = (sb: Sandbox) => ['--project', sb.project];
const json = async (sb: Sandbox, argv: string[]) => {
  const r = await cli(sb, ['--json', ...argv]);
  return { code: r.code, data: JSON.parse(r.stdout), stderr: r.stderr };
};
const grantsFile = (sb: Sandbox) => join(sb.profile, 'sandbox-grants.json');
const audit = (sb: Sandbox) => {
  const db = openDb(sb.profile, 5000);
  try {
    return readAudit(db, { kinds: ['decision', 'sandbox_grant'], limit: 1000 }).map((r): Record<string, any> => ({ kind: r.kind, ...(r.body as Record<string, unknown>) }));
  } finally {
    db.close();
  }
};

async function trusted(): Promise<Sandbox> {
  const sb = sandbox('scg');
  t.equal((await cli(sb, [...ws(sb), 'trust'])).code, 0);
  return sb;
}

t.test("sandbox show lists each package cache at its own path, read-write, though the caches' folder is the one mount", async (t) => {
  const sb = await trusted();
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show', '--', 'true']);
  t.equal(shown.code, 0, shown.stderr);
  const caches: Array<{ name: string; at: string; private: string }> = shown.data.caches;
  const npm = caches.find((c) => c.name === 'npm');
  const gomod = caches.find((c) => c.name === 'go-mod');
  t.ok(npm && gomod, 'npm and Go module caches in the view');
  t.ok(shown.data.read_write.includes(npm!.at), `npm's at its usual path (${npm!.at})`);
  t.ok(shown.data.read_write.includes(gomod!.at), "Go's modules at the project's own folder");
  const line: string[] = shown.data.bwrap;
  const at = line.indexOf(npm!.at);
  t.equal(line[at - 2], '--symlink', 'npm: a link in the private home');
  t.equal(line[at - 1], npm!.private, "into the project's own npm cache");
  const root = npm!.private.slice(0, npm!.private.lastIndexOf('/'));
  t.equal(line.filter((a, i) => a === '--bind' && (line[i + 1] === root || (line[i + 1] as string).startsWith(`${root}/`))).length, 1, "one mount for the caches' folder");
  const registry = caches.find((c) => c.name === 'cargo-registry');
  t.ok(registry && line.some((a, i) => a === '--bind' && line[i + 1] === `${root}.bound/cargo-registry` && line[i + 2] === registry.at), "cargo's registry, filled from yours on the host, bound on its own from beside the caches folder");
  t.equal(registry?.private, `${root}.bound/cargo-registry`, 'and shown as kept there');
  t.ok(line.some((a, i) => a === '--bind' && line[i + 1] === root && line[i + 2] === root), 'the caches folder itself, at its own path');
});

t.test('sandbox show lists pip, uv, yarn and Go build caches where XDG_CACHE_HOME puts them, and says which it does not keep', async (t) => {
  const sb = sandbox('scg');
  const xdg = join(sb.root, 'xc');
  sb.env = { ...sb.env, XDG_CACHE_HOME: xdg };
  t.equal((await cli(sb, [...ws(sb), 'trust'])).code, 0);
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.equal(shown.code, 0, shown.stderr);
  const pip = shown.data.caches.find((c: { name: string }) => c.name === 'pip');
  t.equal(pip?.at, join(xdg, 'pip'), 'pip at $XDG_CACHE_HOME/pip');
  t.equal(pip?.from, '$XDG_CACHE_HOME/pip', 'named by that entry');
  t.ok(shown.data.read_write.includes(join(xdg, 'pip')), 'read-write');
  t.same(shown.data.caches_not_kept, [], 'every cache kept');
  t.equal(shown.data.caches_refused, null, 'the caches folder is used');
  const text = await cli(sb, [...ws(sb), 'sandbox', 'show']);
  t.match(text.stdout, `${join(xdg, 'pip')}  (the project's own pip cache at $XDG_CACHE_HOME/pip, kept in ${pip?.private})`);

  // A beside cache: yours is named, and shown read-only, only where a tool is pointed at it.
  mkdirSync(join(sb.root, 'go', 'pkg', 'mod'), { recursive: true });
  mkdirSync(join(sb.root, '.cache', 'python-bytecode'), { recursive: true });
  const beside = await json(sb, [...ws(sb), 'sandbox', 'show']);
  const goMod = beside.data.caches.find((c: { name: string }) => c.name === 'go-mod');
  const pyc = beside.data.caches.find((c: { name: string }) => c.name === 'python-bytecode');
  t.ok(beside.data.read_only.includes(join(sb.root, 'go', 'pkg', 'mod')), "your Go module cache read-only (GOPROXY reads it)");
  t.notOk(beside.data.read_only.includes(join(sb.root, '.cache', 'python-bytecode')), 'no folder of yours for Python bytecode: nothing reads it');
  const besideText = (await cli(sb, [...ws(sb), 'sandbox', 'show'])).stdout;
  t.match(besideText, `(the project's own go-mod cache, kept in ${goMod?.private}; yours, ${join(sb.root, 'go', 'pkg', 'mod')}, read-only beside it)`);
  t.match(besideText, `(the project's own python-bytecode cache, kept in ${pyc?.private})`, "Python's bytecode: the project's own only");

  // Outside the home: nothing bound there; said, by name.
  const outside = join(sb.root, '..', `${sb.root.split('/').pop()}-xdg`);
  mkdirSync(outside);
  t.teardown(() => import('node:fs').then((fs) => fs.rmSync(outside, { recursive: true, force: true })));
  sb.env = { ...sb.env, XDG_CACHE_HOME: outside };
  const away = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.equal(away.code, 0, away.stderr);
  t.notOk(away.data.caches.some((c: { name: string }) => ['pip', 'uv', 'yarn', 'go-build'].includes(c.name)), 'none of them bound');
  t.same(away.data.caches_not_kept.find((c: { name: string }) => c.name === 'pip'), { name: 'pip', path: join(outside, 'pip'), from: '$XDG_CACHE_HOME/pip', why: 'outside the home' });
  const said = await cli(sb, [...ws(sb), 'sandbox', 'show']);
  t.match(said.stdout, `cache not kept: pip writes in ${join(outside, 'pip')} ($XDG_CACHE_HOME/pip), outside the home`);
});

t.test('sandbox show says why no cache is kept when the caches folder lies where others may write', async (t) => {
  const sb = sandbox('scg');
  const open = join(sb.root, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  sb.env = { ...sb.env, XDG_CACHE_HOME: join(open, 'cache') };
  t.equal((await cli(sb, [...ws(sb), 'trust'])).code, 0);
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.equal(shown.code, 0, shown.stderr);
  t.same(shown.data.caches, [], 'no cache listed');
  t.match(shown.data.caches_refused, { why: 'another user can change it', at: open, folder: new RegExp(`^${open}/cache/shadowcode/sandbox/[0-9a-f]{16}$`) });
  const text = await cli(sb, [...ws(sb), 'sandbox', 'show']);
  t.match(text.stdout, `caches not kept: no package cache of this project is kept between runs: its folder ${shown.data.caches_refused.folder} lies in a folder another user could change`);
  t.match(text.stdout, `set XDG_CACHE_HOME to a folder of your own (${open})`);
});

t.test('sandbox allow --write grants a folder read-write; show --json lists it; revoke takes it back; each is a recorded decision', async (t) => {
  const sb = await trusted();
  const data = join(sb.root, 'data');
  mkdirSync(data);
  const r = await cli(sb, [...ws(sb), 'sandbox', 'allow', data, '--write']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, `granted read-write ${data} to sandboxed processes of ${sb.project}`);
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.equal(shown.code, 0, shown.stderr);
  t.ok(shown.data.read_write.includes(data), 'the folder is read-write');
  t.ok(shown.data.read_write.includes(sb.project), 'beside the project');
  t.notOk(shown.data.read_only.includes(data));
  t.same(shown.data.grants.paths, [{ path: data, write: true, secret: false, scope: 'project' }]);
  t.ok(shown.data.hidden.includes(sb.profile), 'the profile stays hidden');
  t.same(shown.data.network, { mode: 'none', hosts: [] });
  t.equal(shown.data.bwrap, null, 'no command line without a command');
  // Kept in the profile, private, valid; nothing is written into the project.
  t.equal(statSync(grantsFile(sb)).mode & 0o777, 0o600);
  t.match(JSON.parse(readFileSync(grantsFile(sb), 'utf8')), { version: 1, projects: { [sb.project]: { paths: [{ path: data, write: true, secret: false }] } } });
  const again = await cli(sb, [...ws(sb), 'sandbox', 'allow', data, '--write']);
  t.match(again.stdout, /already granted: read-write .*; nothing changed/);
  const rev = await cli(sb, [...ws(sb), 'sandbox', 'revoke', data]);
  t.equal(rev.code, 0, rev.stderr);
  t.match(rev.stdout, `revoked read-write ${data} from sandboxed processes of ${sb.project}`);
  const after = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.same(after.data.grants.paths, []);
  t.notOk(after.data.read_write.includes(data), 'revoked: not shown any more');
  const rows = audit(sb);
  const decisions = rows.filter((x) => x.kind === 'decision' && String(x.action).startsWith('cli:sandbox.'));
  t.match(decisions.map((d) => [d.action, d.allow]), [['cli:sandbox.allow', true], ['cli:sandbox.show', true], ['cli:sandbox.allow', true], ['cli:sandbox.revoke', true], ['cli:sandbox.show', true]]);
  t.match(decisions[0], { reasons: ['cli-user-is-authority', 'sandbox-grants-by-cli'], args: { path: data, write: true, scope: 'project' }, project: sb.project });
  const outcomes = rows.filter((x) => x.kind === 'sandbox_grant');
  t.match(outcomes, [{ action: 'sandbox.allow', ok: true, changed: true, path: data }, { action: 'sandbox.allow', ok: true, changed: false }, { action: 'sandbox.revoke', ok: true, changed: true }]);
  t.equal(outcomes[0]!.decision_id, decisions[0]!.decision_id, 'the outcome is tied to its decision');
});

t.test('the profile is never granted: itself, a folder inside it, or one above it; nothing is written', async (t) => {
  const sb = await trusted();
  await cli(sb, ['secret', 'set', 'SC_X'], 'value-of-a-secret-123');
  mkdirSync(join(sb.profile, 'inside'));
  for (const p of [sb.profile, join(sb.profile, 'inside'), sb.root]) {
    const r = await cli(sb, [...ws(sb), 'sandbox', 'allow', p]);
    t.equal(r.code, 3, `${p} is refused`);
    t.match(r.stderr, /\[SC_SANDBOX_GRANT_REFUSED\]/);
    t.match(r.stderr, /holds state.db and the secret store/);
  }
  const j = await json(sb, [...ws(sb), 'sandbox', 'allow', '--write', sb.profile]);
  t.match(j.data.error, { code: 'SC_SANDBOX_GRANT_REFUSED', detail: { path: sb.profile } });
  t.throws(() => statSync(grantsFile(sb)), 'no grants file was written');
  const refusals = audit(sb).filter((x) => x.kind === 'sandbox_grant');
  t.equal(refusals.length, 4);
  t.ok(refusals.every((x) => x.ok === false && x.changed === false && x.code === 'SC_SANDBOX_GRANT_REFUSED'), 'each refusal is recorded with its code');
});

t.test('a hidden secret path is granted only with --secret, and is then marked secret', async (t) => {
  const sb = await trusted();
  const ssh = join(sb.root, '.ssh');
  mkdirSync(join(ssh, 'keys'), { recursive: true });
  for (const p of [ssh, join(ssh, 'keys')]) {
    const r = await cli(sb, [...ws(sb), 'sandbox', 'allow', p]);
    t.equal(r.code, 3);
    t.match(r.stderr, /the sandbox hides as secret .*--secret.*\[SC_SANDBOX_GRANT_SECRET\]/);
  }
  // A link elsewhere that leads into it is the same path.
  symlinkSync(ssh, join(sb.root, 'innocent'));
  t.match((await cli(sb, [...ws(sb), 'sandbox', 'allow', join(sb.root, 'innocent')])).stderr, /SC_SANDBOX_GRANT_SECRET/);
  const ok = await json(sb, [...ws(sb), 'sandbox', 'allow', ssh, '--secret']);
  t.equal(ok.code, 0);
  t.match(ok.data, { grant: { path: ssh, write: false, secret: true }, changed: true });
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.same(shown.data.grants.paths, [{ path: ssh, write: false, secret: true, scope: 'project' }]);
  t.ok(shown.data.read_only.includes(ssh));
  t.notOk(shown.data.hidden.includes(ssh), 'granted: no longer listed as hidden');
  const other = join(sb.root, 'plain');
  mkdirSync(other);
  t.match((await json(sb, [...ws(sb), 'sandbox', 'allow', other, '--secret'])).data.grant, { secret: false }, '--secret does not mark a path that is not secret');
});

t.test('what cannot be granted: a missing path, one inside the project, a protected path, a bad host; and revoking what was never granted', async (t) => {
  const sb = await trusted();
  const missing = await cli(sb, [...ws(sb), 'sandbox', 'allow', join(sb.root, 'nope')]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /nope does not exist; create it first.*\[SC_SANDBOX_GRANT_INVALID\]/);
  mkdirSync(join(sb.project, 'sub'));
  t.match((await cli(sb, [...ws(sb), 'sandbox', 'allow', join(sb.project, 'sub')])).stderr, /lies in the project.*\[SC_SANDBOX_GRANT_INVALID\]/);
  mkdirSync(join(sb.project, '.git'));
  const git = await cli(sb, [...ws(sb), 'sandbox', 'allow', join(sb.project, '.git'), '--write']);
  t.equal(git.code, 3);
  t.match(git.stderr, /protected path \.git.*\[SC_SANDBOX_GRANT_REFUSED\]/);
  for (const bad of ['not a host', 'x:0', 'x:70000', '-a.com']) t.match((await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', bad])).stderr, /SC_SANDBOX_GRANT_INVALID/, bad);
  const none = await cli(sb, [...ws(sb), 'sandbox', 'revoke', join(sb.root, 'never')]);
  t.equal(none.code, 1);
  t.match(none.stderr, /grants no path .*\[SC_SANDBOX_GRANT_NOT_FOUND\]/);
  t.match((await cli(sb, [...ws(sb), 'sandbox', 'allow'])).stderr, /\[SC_USAGE\]/, 'a path or --net is needed');
  t.match((await cli(sb, ['sandbox', 'allow', sb.root])).stderr, /\[SC_WORKSPACE_REQUIRED\]/, 'a project grant needs the project');
});

t.test('--all-projects grants to every project; hosts are listed with their port; --private is recorded', async (t) => {
  const sb = await trusted();
  const shared = join(sb.root, 'shared');
  mkdirSync(shared);
  t.equal((await cli(sb, ['sandbox', 'allow', '--all-projects', shared])).code, 0);
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', 'API.Example.com.:8443'])).code, 0);
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', 'git.corp.example', '--private'])).code, 0);
  const other = join(sb.root, 'other');
  mkdirSync(other);
  const o = await json(sb, ['--project', other, 'sandbox', 'show']);
  t.same(o.data.grants.paths, [{ path: shared, write: false, secret: false, scope: 'all_projects' }], 'another project gets the all-projects grant');
  t.same(o.data.grants.hosts, [], 'but not this project\'s hosts');
  const p = await json(sb, [...ws(sb), 'sandbox', 'show']);
  t.same(p.data.network, { mode: 'hosts', hosts: ['api.example.com:8443', 'git.corp.example'] });
  t.match(p.data.grants.hosts, [{ host: 'api.example.com', port: 8443, private: false }, { host: 'git.corp.example', port: null, private: true }]);
  const text = await cli(sb, [...ws(sb), 'sandbox', 'show']);
  t.match(text.stdout, /network {3}only api\.example\.com:8443, git\.corp\.example, through shadowcode's proxy/);
  t.match(text.stdout, new RegExp(`${shared}  \\(granted for all projects\\)`));
  t.equal((await cli(sb, ['sandbox', 'revoke', '--all-projects', shared])).code, 0);
  t.same((await json(sb, ['--project', other, 'sandbox', 'show'])).data.grants.paths, []);
  // With the project's whole network open, hosts do not narrow it.
  await cli(sb, [...ws(sb), 'trust', '--network']);
  t.same((await json(sb, [...ws(sb), 'sandbox', 'show'])).data.network, { mode: 'all', hosts: [] });
});

t.test('sandbox show -- COMMAND prints the exact bwrap command line, with the bridge when only granted hosts may be reached', async (t) => {
  const sb = await trusted();
  const plain = await json(sb, [...ws(sb), 'sandbox', 'show', '--', 'sh', '-c', 'echo hi']);
  const line: string[] = plain.data.bwrap;
  t.match(line[0], /bwrap$/);
  t.same(line.slice(1, 3), ['--seccomp', '3'], 'with the syscall filter a start adds, on its own descriptor');
  const end = line.indexOf('--');
  t.same(line.slice(end - 2, end), ['--chdir', sb.project], 'run in the project');
  t.same(line.slice(end + 1, end + 3), ['/bin/sh', '-c'], 'the shell that reports what is left in the private home and /tmp starts first');
  t.same(line.slice(end + 4, end + 6), ['sh', '/run/shadowcode/report']);
  t.same(line.slice(-3), ['sh', '-c', 'echo hi'], 'ends with the command');
  t.ok(line.some((a, i) => a === '--bind' && /shadowcode-out-XXXXXX$/.test(line[i + 1] as string) && line[i + 2] === '/run/shadowcode/report'), 'the report file is bound in');
  t.ok(line.includes('--unshare-all') && !line.includes('--share-net'), 'no network');
  await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', 'api.example.com']);
  const bridged: string[] = (await json(sb, [...ws(sb), 'sandbox', 'show', '--', 'sh'])).data.bwrap;
  const dash = bridged.indexOf('--');
  t.match(bridged.slice(bridged.indexOf(process.execPath, dash)), [process.execPath, /net-bridge\.cjs$/, /shadowcode-net-XXXXXX\/proxy\.sock$/, '--', 'sh'], 'the bridge starts the command');
  const text = await cli(sb, [...ws(sb), 'sandbox', 'show', '--', 'sh', '-c', 'echo hi']);
  t.match(text.stdout, /bwrap command line:\n {2}\S*bwrap .* -- \/bin\/sh -c [\s\S]* \S+ \S+net-bridge\.cjs \S+ -- sh -c 'echo hi'/);
});

t.test('a grants file that does not match its schema stops show and every sandboxed start, with its own code', async (t) => {
  const sb = await trusted();
  await cli(sb, [...ws(sb), 'status']);
  writeFileSync(grantsFile(sb), JSON.stringify({ version: 1, all_projects: { paths: [{ path: 'relative' }], hosts: [] }, projects: {} }));
  const r = await cli(sb, [...ws(sb), 'sandbox', 'show']);
  t.equal(r.code, 1);
  t.match(r.stderr, /sandbox-grants\.json.*\[SC_SANDBOX_GRANTS_INVALID\]/);
  const run = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'sh', '-c', 'echo RAN']);
  t.not(run.code, 0);
  t.notMatch(run.stdout, /^RAN$/m, 'nothing ran');
  t.match(run.stdout, /SC_SANDBOX_GRANTS_INVALID/);
});

t.test('a scope holds at most grants.sandbox_paths paths', async (t) => {
  const sb = await trusted();
  const base = shippedPolicy();
  const policy = { ...base, limits: { ...base.limits, grants: { ...base.limits.grants, sandbox_paths: 1 } } };
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const ops = {
    gate: { policy, db: () => db },
    db: () => db,
    policy,
    profileDir: sb.profile,
    env: sb.env,
    request: (action: string, extra = {}) => ({ action, principal: { kind: 'cli' as const, owner: 'cli', allow_write: true, allow_approvals: true }, project: { path: sb.project, trusted: true, level: 'workspace' as const }, ...extra }),
  };
  for (const n of ['a', 'b']) mkdirSync(join(sb.root, n));
  await allow(ops, { project: sb.project }, { path: join(sb.root, 'a') }, sb.root);
  await t.rejects(allow(ops, { project: sb.project }, { path: join(sb.root, 'b') }, sb.root), { code: 'SC_LIMIT_REACHED' });
  await allow(ops, { project: sb.project }, { path: join(sb.root, 'a'), write: true }, sb.root);
  t.match(JSON.parse(readFileSync(grantsFile(sb), 'utf8')).projects[sb.project].paths, [{ path: join(sb.root, 'a'), write: true }], 'changing a grant in place is not a new one');
});

t.test("a command the model names ./codex does not get ~/.codex (its login) by its name", async (t) => {
  const sb = await trusted();
  const state = join(sb.root, '.codex');
  mkdirSync(state);
  writeFileSync(join(state, 'auth.json'), '{"token":"sk-state-canary"}\n');
  writeFileSync(join(sb.project, 'codex'), '#!/bin/sh\ncat "$HOME/.codex/auth.json"\necho pwn > "$HOME/.codex/config.toml"\n', { mode: 0o755 });
  const shown = await json(sb, [...ws(sb), 'sandbox', 'show', '--', './codex']);
  t.equal(shown.code, 0, shown.stderr);
  t.notOk([...shown.data.read_write, ...shown.data.read_only].some((p: string) => p === state || p.startsWith(`${state}/`)), 'the state folder is not shown at all');
  const r = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', './codex']);
  t.notMatch(r.stdout + r.stderr, /sk-state-canary/, 'the login is not read');
  t.notOk(existsSync(join(state, 'config.toml')), 'no settings file is created in the real state folder');
});

t.test('a PATH folder inside the project never shows what it leads to: a .venv/bin swapped for a link, or a link in it, shows nothing outside', async (t) => {
  const sb = await trusted();
  const secret = join(sb.root, 'elsewhere');
  mkdirSync(secret);
  writeFileSync(join(secret, 'token.txt'), 'path-canary\n');
  mkdirSync(join(sb.project, '.venv'));
  symlinkSync(secret, join(sb.project, '.venv', 'bin'));
  mkdirSync(join(sb.project, 'tools'));
  symlinkSync(join(secret, 'token.txt'), join(sb.project, 'tools', 'helper'));
  const env = { ...sb.env, PATH: `${join(sb.project, '.venv', 'bin')}:${join(sb.project, 'tools')}:${process.env.PATH}` };
  const r = await cli({ ...sb, env }, ['--json', ...ws(sb), 'sandbox', 'show', '--', 'cat', join(secret, 'token.txt')]);
  t.equal(r.code, 0, r.stderr);
  const shown = JSON.parse(r.stdout);
  t.notOk([...shown.read_write, ...shown.read_only].some((p: string) => p === secret || p.startsWith(`${secret}/`) || secret.startsWith(`${p}/`)), 'the folder it leads to is not shown');
  const run = await cli({ ...sb, env }, ['--json', ...ws(sb), 'test', '--yes', '--', 'cat', join(secret, 'token.txt')]);
  t.notMatch(run.stdout, /path-canary/, 'and a command cannot read it');
});
