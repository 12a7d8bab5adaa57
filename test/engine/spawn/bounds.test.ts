// What bounds a sandboxed process, with a real bwrap and real processes: no capabilities
// (also as root, which bwrap would otherwise leave with a full set), so remount, umount and
// writes to system folders and to the host's sysctls fail; a private /tmp and home of limits.sandbox size; at most
// limits.sandbox.processes processes, while the host goes on forking.
//
// Each runs as the user running the suite (root in CI; an ordinary user on a laptop and in
// .ci/non-root, which runs this file as one). Run as root, each is also run as an ordinary
// user (uid 65534): those variants need root to start a process as another user, so a run
// as an ordinary user has them not at all; its own run above is that case.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { sandboxStatus, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { processBound } from '../../../src/engine/spawn/bounds.js';
import { sandboxArgv } from '../../../src/engine/spawn/sandbox.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { until } from '../../fixtures/env.js';
import { approvedCommand, isRoot, marked, NOBODY, ordinaryUser, withSandboxLimits } from '../../fixtures/sandboxed.js';

const who = isRoot ? 'root' : 'an ordinary user';

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
});

// /opt is in the system folders only where the host has one.
const OPT = existsSync('/opt');
const canary = `sc-canary-${process.pid}`;

/** Tries, from inside, what would undo the sandbox's read-only mounts and cover; one marked line each. */
const undoScript = (project: string, profile: string) =>
  [
    'grep -E "^Cap(Eff|Prm|Amb):" /proc/self/status | sed "s/^/@ /"',
    `mount -o remount,bind,rw ${project}/.git 2>/dev/null && echo "@ REMOUNTED .git" || echo "@ no remount of .git"`,
    `(echo x > ${project}/.git/hooks/pre-commit) 2>/dev/null && echo "@ WROTE .git" || echo "@ .git read-only"`,
    `umount ${project}/.git 2>/dev/null && echo "@ UNMOUNTED .git" || echo "@ no umount of .git"`,
    `umount ${profile} 2>/dev/null && echo "@ UNMOUNTED the profile cover" || echo "@ no umount of the profile cover"`,
    `ls -A ${profile} | sed "s/^/@ profile holds /"`,
    `mount -t tmpfs none ${project}/.git 2>/dev/null && echo "@ MOUNTED over .git" || echo "@ no new mount"`,
    ...(OPT ? [`mount -o remount,bind,rw /opt 2>/dev/null && echo "@ REMOUNTED /opt" || echo "@ no remount of /opt"`, `(touch /opt/${canary}) 2>/dev/null && echo "@ WROTE /opt" || echo "@ /opt read-only"`] : []),
    `(touch /usr/${canary}) 2>/dev/null && echo "@ WROTE /usr" || echo "@ /usr read-only"`,
    `(touch /etc/${canary}) 2>/dev/null && echo "@ WROTE /etc" || echo "@ /etc read-only"`,
    'unshare -U true 2>/dev/null && echo "@ NEW USER NAMESPACE" || echo "@ no new user namespace"',
    // The host's sysctls: root inside is the host's uid 0, and /proc/sys checks only the uid (a
    // core_pattern "|/project/x" would run x as root on the host). The same value is written back,
    // so a hole found changes nothing.
    '(c=$(cat /proc/sys/kernel/core_pattern) && printf "%s\\n" "$c" > /proc/sys/kernel/core_pattern) 2>/dev/null && echo "@ WROTE /proc/sys" || echo "@ /proc/sys read-only"',
  ].join('; ');

const UNDONE_NOTHING = [
  'CapPrm:\t0000000000000000',
  'CapEff:\t0000000000000000',
  'CapAmb:\t0000000000000000',
  'no remount of .git',
  '.git read-only',
  'no umount of .git',
  'no umount of the profile cover',
  'no new mount',
  ...(OPT ? ['no remount of /opt', '/opt read-only'] : []),
  '/usr read-only',
  '/etc read-only',
  'no new user namespace',
  '/proc/sys read-only',
];

function hostUntouched(t: any, project: string) {
  t.notOk(existsSync(join(project, '.git', 'hooks', 'pre-commit')), 'no hook reached the real .git');
  for (const dir of [...(OPT ? ['/opt'] : []), '/usr', '/etc']) {
    t.notOk(existsSync(join(dir, canary)), `nothing reached the host's ${dir}`);
  }
}

t.test(`as ${who}, an approved command has no capabilities: remount, umount, a new mount or user namespace and writes to system folders all fail`, async (t) => {
  const secret = `secret-canary-${process.pid}`;
  const { result, b } = await approvedCommand(t, (b) => undoScript(b.sb.project, b.sb.profile), {
    // The profile inside the project: only the cover over it keeps secrets.json out of view.
    profileInProject: 'prof',
    setup: (b) => {
      mkdirSync(join(b.sb.project, '.git', 'hooks'), { recursive: true });
      writeFileSync(join(b.sb.profile, 'secrets.json'), JSON.stringify({ X: secret }), { mode: 0o600 });
    },
  });
  // Removed again even when an assertion below fails: a test that found a hole must not leave it on the host.
  t.teardown(() => {
    for (const dir of ['/opt', '/usr', '/etc']) rmSync(join(dir, canary), { force: true });
  });
  t.strictSame(marked(result), UNDONE_NOTHING, result);
  t.notMatch(result, secret);
  hostUntouched(t, b.sb.project);
});

if (isRoot) {
  // Root only: starting the sandbox as another user needs root. A suite run as an ordinary user covers this case above.
  t.test('as an ordinary user (uid 65534, started by root), the same command has no capabilities either, and undoes nothing', async (t) => {
    const w = ordinaryUser(t, { profileInProject: 'prof' });
    mkdirSync(join(w.project, '.git', 'hooks'), { recursive: true });
    w.file(join(w.profile, 'secrets.json'), '{"X":"secret-canary"}');
    const run = w.start(undoScript(w.project, w.profile));
    t.equal(await run.exit, 0, run.out());
    t.strictSame(marked(run.out()), UNDONE_NOTHING, run.out());
    t.notMatch(run.out(), 'secret-canary');
    hostUntouched(t, w.project);
  });
}

const SMALL = { tmp_bytes: 1048576, home_bytes: 2097152 };

/** Writes past each bound; one marked line per folder: what landed and why it stopped. */
const fillScript = (err: string) =>
  [
    `head -c 1500000 /dev/zero > /tmp/fill 2>${err}; echo "@ /tmp $(stat -c %s /tmp/fill) $(grep -o 'No space left on device' ${err})"`,
    `head -c 2500000 /dev/zero > "$HOME/fill" 2>${err}; echo "@ home $(stat -c %s "$HOME/fill") $(grep -o 'No space left on device' ${err})"`,
    `df -B1 --output=size /tmp "$HOME" | tail -n 2 | sed "s/^ */@ size /"`,
  ].join('; ');

const FILLED = ['/tmp 1048576 No space left on device', 'home 2097152 No space left on device', 'size 1048576', 'size 2097152'];

t.test(`as ${who}, the private /tmp and home hold limits.sandbox bytes at most: a write past them fails with ENOSPC`, async (t) => {
  const { result } = await approvedCommand(t, (b) => fillScript(join(b.sb.project, 'err.txt')), { policy: withSandboxLimits(SMALL) });
  t.strictSame(marked(result), FILLED, result);
});

if (isRoot) {
  // Root only: see above.
  t.test('as an ordinary user (uid 65534, started by root), the same bounds hold', async (t) => {
    const w = ordinaryUser(t);
    const run = w.start(fillScript(join(w.project, 'err.txt')), { policy: withSandboxLimits(SMALL) });
    await run.exit;
    t.strictSame(marked(run.out()), FILLED, run.out());
  });
}

const CAP = 64;

/**
 * A fork loop: sleepers until a fork fails (at most 1000), then it says so in a file and waits
 * on a FIFO (builtins only: it cannot fork any more) until the test has looked at the host.
 */
const forkScript = (dir: string) =>
  [
    `cd ${dir}`,
    'mkfifo go',
    '( i=0; while [ $i -lt 1000 ]; do sleep 600 & i=$((i+1)); echo $i > forked; done ) 2>/dev/null',
    'echo capped > state',
    'read x < go',
    'read n < forked',
    'echo "@ forked $n"',
  ].join('; ');

async function whileCapped(t: any, dir: string, hostCheck: () => number) {
  await until(() => existsSync(join(dir, 'state')), 60000);
  t.equal(hostCheck(), 7, 'the host still starts processes of the same user while the sandbox is full');
  writeFileSync(join(dir, 'go'), 'go\n');
}

function forkedWithinCap(t: any, out: string) {
  const [line] = marked(out);
  const n = Number(/^forked (\d+)$/.exec(line ?? '')?.[1]);
  // bubblewrap's own processes and the shells count too: a few less than the cap.
  t.ok(n < CAP && n >= CAP - 8, `forked ${n} sleepers under a cap of ${CAP}: ${out}`);
}

t.test(`as ${who}, a fork loop stops at limits.sandbox.processes while the host goes on`, async (t) => {
  const policy = withSandboxLimits({ processes: CAP });
  const pb = processBound(isRoot ? 0 : (process.getuid?.() ?? -1));
  t.equal(pb.kind, isRoot ? 'cgroup' : 'rlimit', isRoot ? 'root: a pids cgroup' : 'an ordinary user: RLIMIT_NPROC in the user namespace');
  t.match(sandboxStatus(policy).detail, `; at most ${CAP} processes`, 'status says so');
  const { result } = await approvedCommand(t, (b) => forkScript(b.sb.project), {
    policy,
    during: (b) => whileCapped(t, b.sb.project, () => spawnSync('/bin/sh', ['-c', 'exit 7']).status ?? -1),
  });
  forkedWithinCap(t, result);
  if (pb.kind === 'cgroup') {
    // Its last processes leave it a moment after bwrap has gone; then it is removed.
    const mine = () => readdirSync(pb.base).filter((n) => n.startsWith(`shadowcode-${process.pid}-`));
    await until(() => mine().length === 0, 5000).catch(() => {});
    t.strictSame(mine(), [], "the sandbox's cgroup is gone with it");
  }
});

if (isRoot) {
  // Root only: see above. An ordinary user's bound is RLIMIT_NPROC, counted in the sandbox's user namespace alone.
  t.test('as an ordinary user (uid 65534, started by root), a fork loop stops at the cap while that user goes on forking outside', async (t) => {
    const w = ordinaryUser(t);
    const run = w.start(forkScript(w.project), { policy: withSandboxLimits({ processes: CAP }) });
    await whileCapped(t, w.project, () => spawnSync('/bin/sh', ['-c', 'exit 7'], { uid: NOBODY, gid: NOBODY }).status ?? -1);
    await run.exit;
    forkedWithinCap(t, run.out());
  });
}

t.test('the shipped limits bound every sandbox, and status says so', async (t) => {
  const L = shippedPolicy().limits.sandbox;
  t.strictSame(L, { tmp_bytes: 1073741824, home_bytes: 1073741824, processes: 4096, path_entries: 4096, cache_seed_entries: 200000, explain_bytes: 65536, discarded_entries: 10000, placeholder_linger_ms: 3000, placeholder_lock_wait_ms: 15000, placeholder_lock_stale_ms: 10000 });
  t.equal(sandboxStatus(shippedPolicy()).detail, `bubblewrap (${sandboxSupport().bwrap}); no capabilities; /tmp 1024 MiB, home 1024 MiB; at most 4096 processes; no kernel keyring, no perf_event_open/userfaultfd/bpf, no setuid or setgid files, no new user namespaces`);
});

t.test('a bwrap without --size and --disable-userns (before 0.8.0) still drops every capability; the sizes are left out', async (t) => {
  const p = shippedPolicy();
  const plan = { argv: ['true'], cwd: '/', env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent-home' }, bwrap: '/usr/bin/bwrap', trusted: false, unset: [], stateLimits: p.limits.runners, project: null, network: false, profileDir: null, policy: p.sandbox };
  const bounds = (size: boolean, disableUserns: boolean) => ({ tmp_bytes: 1048576, home_bytes: 2097152, inner: [], features: { size, disableUserns } });
  const all = sandboxArgv({ ...plan, bounds: bounds(true, true) }).join(' ');
  t.match(all, '--cap-drop ALL --unshare-user --disable-userns');
  t.match(all, '--size 1048576 --tmpfs /tmp');
  t.match(all, '--size 2097152 --tmpfs /nonexistent-home');
  const old = sandboxArgv({ ...plan, bounds: bounds(false, false) }).join(' ');
  t.match(old, '--cap-drop ALL');
  t.notMatch(old, /--disable-userns|--size/);
  t.match(old, '--tmpfs /tmp');
});
