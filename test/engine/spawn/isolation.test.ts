// What a sandboxed process cannot see or be tricked into running, with a real bwrap and real
// processes: the profile when it lies inside the project (only the cover over it hides it
// there), a file in the host's /tmp, a program planted in the project that a relative PATH
// entry would find, and, for a stdio MCP server, the profile's secrets, the home and the
// host's loopback. Every comparison is exact: nothing else may show.
//
// Each runs as the user running the suite (root in CI; an ordinary user on a laptop and in
// .ci/non-root, which runs this file as one). Run as root, the profile and /tmp checks are
// also run as an ordinary user (uid 65534): those variants need root to start a process as
// another user, so a run as an ordinary user has them not at all; its own run is that case.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { openTarget } from '../../../src/client/open.js';
import { enabledTargets } from '../../../src/client/targets.js';
import { sandboxSupport } from '../../../src/engine/spawn/index.js';
import { readAudit } from '../../../src/store/audit.js';
import { cli, ROOT, SHARED_TMP } from '../../fixtures/env.js';
import { grant, world } from '../../fixtures/mcp-client.js';
import { approvedCommand, isRoot, marked, ordinaryUser } from '../../fixtures/sandboxed.js';

const who = isRoot ? 'root' : 'an ordinary user';

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
});

const SECRET = `secret-canary-${process.pid}-value`;

/** Reads and lists the profile from inside. */
const profileScript = (profile: string) =>
  [
    `(cat ${profile}/secrets.json) 2>/dev/null && echo "@ READ secrets.json" || echo "@ no secrets.json"`,
    `(cat ${profile}/state.db) >/dev/null 2>&1 && echo "@ READ state.db" || echo "@ no state.db"`,
    `ls -A ${profile} | sed "s/^/@ the profile holds /"`,
    'echo "@ end"',
  ].join('; ');

t.test(`as ${who}, a profile inside the project is not visible to an approved command`, async (t) => {
  const { result, b } = await approvedCommand(t, (b) => profileScript(b.sb.profile), {
    profileInProject: 'prof',
    setup: async (b) => {
      t.equal((await cli(b.sb, ['secret', 'set', 'SC_CANARY'], SECRET)).code, 0, 'a secret is stored');
    },
  });
  t.ok(readFileSync(join(b.sb.profile, 'secrets.json'), 'utf8').length > 0, 'the profile has a secrets.json, in the project');
  t.strictSame(marked(result), ['no secrets.json', 'no state.db', 'end'], result);
  t.notMatch(result, SECRET);
});

if (isRoot) {
  // Root only: starting the sandbox as another user needs root. A suite run as an ordinary user covers this case above.
  t.test("as an ordinary user (uid 65534, started by root), that user's own profile inside the project is not visible either", async (t) => {
    const w = ordinaryUser(t, { profileInProject: 'prof' });
    // Theirs, and readable by them: only the sandbox stands between the command and it.
    w.file(join(w.profile, 'secrets.json'), JSON.stringify({ SC_CANARY: SECRET }));
    w.file(join(w.profile, 'state.db'), 'not really a database');
    const run = w.start(profileScript(w.profile));
    t.equal(await run.exit, 0, run.out());
    t.strictSame(marked(run.out()), ['no secrets.json', 'no state.db', 'end'], run.out());
    t.notMatch(run.out(), SECRET);
  });
}

/** Reads a canary in the host's /tmp and lists /tmp from inside. */
const tmpScript = (canary: string) => [`(cat ${canary}) 2>/dev/null && echo "@ READ the canary" || echo "@ no canary"`, 'ls -A /tmp | sed "s/^/@ \\/tmp holds /"', 'echo "@ end"'].join('; ');

/** The private /tmp holds only the folders bwrap made on the way to the project's mount point. */
/**
 * The private /tmp holds only the folders bwrap made on the way to the project's mount point, and
 * to a folder on PATH below /tmp (the toolchains are shown: a test run from a checkout there has
 * its node_modules/.bin on PATH).
 */
const tmpHolds = (project: string, path = process.env.PATH ?? '') => {
  const tops = [project, ...path.split(':').filter((d) => d.startsWith('/tmp/') && existsSync(d))].filter((p) => p.startsWith('/tmp/')).map((p) => p.split('/')[2] as string);
  return [...[...new Set(tops)].sort().map((n) => `/tmp holds ${n}`), 'end'];
};

function hostCanary(t: any): string {
  const canary = join('/tmp', `sc-host-canary-${process.pid}`);
  writeFileSync(canary, SECRET, { mode: 0o644 });
  t.teardown(() => rmSync(canary, { force: true }));
  return canary;
}

t.test(`as ${who}, a file in the host's /tmp is not visible to an approved command: its /tmp is its own`, async (t) => {
  const canary = hostCanary(t);
  const { result, b } = await approvedCommand(t, () => tmpScript(canary));
  t.strictSame(marked(result), ['no canary', ...tmpHolds(b.sb.project)], result);
  t.notMatch(result, SECRET);
});

if (isRoot) {
  // Root only: see above.
  t.test("as an ordinary user (uid 65534, started by root), a world-readable file in the host's /tmp is not visible either", async (t) => {
    const canary = hostCanary(t);
    const w = ordinaryUser(t);
    const run = w.start(tmpScript(canary));
    t.equal(await run.exit, 0, run.out());
    t.strictSame(marked(run.out()), ['no canary', ...tmpHolds(w.project, '/usr/local/bin:/usr/bin:/bin')], run.out());
  });
}

/** A `sh` planted where a relative PATH entry (node_modules/.bin) and an empty one (the current folder) would find it first. */
function plant(project: string) {
  mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
  for (const at of [join(project, 'node_modules', '.bin', 'sh'), join(project, 'sh')]) {
    writeFileSync(at, '#!/bin/sh\necho "@ PLANTED"\n');
    chmodSync(at, 0o755);
  }
}

/** Runs an approved `sh -c` with the engine's PATH set to `path` while it runs. */
async function withPath<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = path;
  try {
    return await fn();
  } finally {
    process.env.PATH = saved;
  }
}

t.test(`as ${who}, a relative or empty PATH entry cannot make an approved ["sh", "-c", ...] run a sh the project planted`, async (t) => {
  const { result, spawns } = await withPath(`node_modules/.bin::${process.env.PATH}`, () => approvedCommand(t, () => 'echo "@ the real sh"', { setup: (b) => plant(b.sb.project) }));
  t.strictSame(marked(result), ['the real sh'], result);
  t.strictSame(spawns.map((r) => [r.kind, r.level]), [['command', 'bwrap']], 'sandboxed');
});

t.test('unsandboxed (no bwrap on PATH) too, the planted sh is not run', async (t) => {
  // A PATH with sh and without bwrap.
  const bin = mkdtempSync(join(SHARED_TMP, 'sc-bin-'));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  symlinkSync('/bin/sh', join(bin, 'sh'));
  const { result, spawns } = await withPath(`node_modules/.bin::${bin}`, () => approvedCommand(t, () => 'echo "@ the real sh"', { setup: (b) => plant(b.sb.project) }));
  t.strictSame(marked(result), ['the real sh'], result);
  t.strictSame(spawns.map((r) => [r.kind, r.level]), [['command', 'none']], 'unsandboxed');
});

t.test(`as ${who}, a stdio MCP server is confined: from inside it cannot read the profile's secrets or the home, nor reach the host's loopback`, async (t) => {
  const w = await world();
  t.equal((await cli(w.sb, ['secret', 'set', 'SC_CANARY'], SECRET)).code, 0, 'a secret is stored');
  const homeFile = join(w.sb.root, 'notes.txt');
  writeFileSync(homeFile, 'mine\n');
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const report = join(w.sb.project, 'probe-report.json');
  // One JSON word, not paths: a server definition's absolute arguments are made readable (its script, a config).
  const ask = JSON.stringify({ secrets: join(w.sb.profile, 'secrets.json'), home_file: homeFile, port: (server.address() as { port: number }).port, report });
  await grant(w, 'prober', { command: [process.execPath, join(ROOT, 'test', 'fixtures', 'mcp-prober.mjs'), ask], timeout_sec: 10 });
  rmSync(report, { force: true });
  const target = enabledTargets(w.db, w.sb.project, w.policy, w.secrets).find((x) => x.def.name === 'prober')!;
  const o = await openTarget(w.deps, { principal: { kind: 'engine', owner: 'test:owner', allow_write: true, allow_approvals: false }, project: { path: w.sb.project, trusted: true, level: 'workspace', network: false }, requested_level: 'workspace' }, w.sb.project, target, new AbortController().signal);
  await o.conn.close();
  t.strictSame(JSON.parse(readFileSync(report, 'utf8')), { secrets: 'ENOENT', home_file: 'ENOENT', loopback: 'ECONNREFUSED' }, 'each attempt failed');
  t.equal(connections, 0, 'the listener on the host saw no connection');
  // Its review at `mcp enable` started it too: each start sandboxed, without network.
  const rows = readAudit(w.db, { kinds: ['spawn'], limit: 10 }).map((r) => r.body as Record<string, unknown>);
  t.strictSame(rows.map((r) => [r.kind, r.level, r.network]), [['mcp_server', 'bwrap', false], ['mcp_server', 'bwrap', false]]);
});
