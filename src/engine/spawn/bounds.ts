/*
 * How many processes one sandbox may hold at once (policy limits.sandbox.processes),
 * decided per start by who starts it:
 *
 *   an ordinary user ─► RLIMIT_NPROC set inside the sandbox (`/bin/sh` runs first there,
 *     sets soft and hard limit with `ulimit` and execs the command): since Linux 5.14 the
 *     kernel counts it per user namespace, so it counts the sandbox's own processes, never
 *     the user's others; N at most the hard limit this process has (it cannot be raised)
 *   root ─► exempt from RLIMIT_NPROC, so a pids cgroup of its own per start: a child of
 *     our cgroup in the v1 pids hierarchy (or of the v2 root, where pids is enabled),
 *     pids.max = N; the process that starts bwrap (this one, or the supervisor) joins it
 *     for the fork and goes back to its own right after (inCgroup), so bwrap and everything
 *     inside start in it and no shell runs first; removed again once the sandbox has ended
 *     (its last processes leave it a moment after bwrap: tried again for up to 2 s; a dead
 *     owner's are swept by the next one)
 *   root without a writable pids cgroup ─► no process bound; status and doctor say so
 *
 * Both count threads as well as processes, bubblewrap's own two included.
 */
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { dirname, join } from 'node:path';

export type ProcessBound =
  | { readonly kind: 'rlimit' }
  | { readonly kind: 'cgroup'; readonly base: string }
  | { readonly kind: 'none'; readonly why: string };

/** What one start needs: the cgroup its starter joins for the fork (root), a command inside before the command (a user), and what to undo after. */
export interface StartBound {
  /** The start's pids cgroup's cgroup.procs (root): the process that starts bwrap starts it with inCgroup. */
  readonly cgroup: string | null;
  readonly inner: readonly string[];
  readonly release: () => void;
}

const NONE: StartBound = { cgroup: null, inner: [], release: () => {} };

/** The shell that sets the limit inside (a system folder the sandbox shows). */
export const SHELL = '/bin/sh';

/** The pids cgroup folder this process may make children in, as root; null with the reason when there is none. */
function pidsCgroup(): { base: string } | { why: string } {
  let mounts: string;
  let mine: string;
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    mine = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return { why: 'no /proc/self/cgroup' };
  }
  const where = (line: string) => {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    return { root: f[3] as string, at: (f[4] as string).replace(/\\040/g, ' '), type: f[dash + 1], opts: (f[dash + 3] ?? '').split(',') };
  };
  const mine1 = /^\d+:(?:[^:]*,)?pids(?:,[^:]*)?:(.*)$/m.exec(mine)?.[1];
  const table = mounts.split('\n').filter((l) => l.includes(' - ')).map(where);
  const v1 = table.find((m) => m.type === 'cgroup' && m.opts.includes('pids'));
  const inside = (root: string, path: string) => (root === '/' ? path : path.startsWith(`${root}/`) || path === root ? path.slice(root.length) || '/' : null);
  if (v1 && mine1 !== undefined) {
    const rel = inside(v1.root, mine1);
    if (rel !== null) return writable(join(v1.at, rel));
  }
  // cgroup v2: a child can hold processes with pids.max only below a cgroup whose subtree has pids enabled,
  // and only the hierarchy's root may both hold processes (ours) and enable it.
  const mine2 = /^0::(.*)$/m.exec(mine)?.[1];
  const v2 = table.find((m) => m.type === 'cgroup2');
  if (v2 && mine2 === '/' && v2.root === '/') {
    const control = join(v2.at, 'cgroup.subtree_control');
    try {
      if (!readFileSync(control, 'utf8').split(/\s+/).includes('pids')) writeFileSync(control, '+pids');
      return writable(v2.at);
    } catch {
      return { why: 'the cgroup v2 root has no pids controller we may enable' };
    }
  }
  return { why: v1 || v2 ? 'no pids cgroup this process may write' : 'no pids cgroup mounted' };
}

function writable(base: string): { base: string } | { why: string } {
  try {
    accessSync(base, constants.W_OK);
    return { base };
  } catch {
    return { why: `the pids cgroup ${base} is not writable` };
  }
}

const NAME = /^shadowcode-(\d+)-\d+$/;

/** A cgroup of an owner that died (killed before its sandbox's release) is empty: removed; one in use refuses (EBUSY). */
function sweep(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = NAME.exec(name)?.[1];
    if (!owner || Number(owner) === process.pid || existsSync(`/proc/${owner}`)) continue;
    try {
      rmdirSync(join(base, name));
    } catch {
      /* still holds processes, or gone */
    }
  }
}

const decided = new Map<number, ProcessBound>();

/** How a sandbox started by `uid` is bounded; decided once per uid and process. */
export function processBound(uid: number): ProcessBound {
  let b = decided.get(uid);
  if (b) return b;
  if (process.platform !== 'linux') b = { kind: 'none', why: `no process bound on ${process.platform}` };
  else if (uid !== 0) {
    const [major = 0, minor = 0] = release().split('.').map((x) => Number.parseInt(x, 10));
    // Before 5.14 the count was the user's, across every namespace: a bound there would count their other processes too.
    if (major < 5 || (major === 5 && minor < 14)) b = { kind: 'none', why: `Linux ${release()} counts RLIMIT_NPROC per user, not per user namespace (5.14 and later)` };
    else b = { kind: 'rlimit' };
  } else {
    const cg = pidsCgroup();
    if ('base' in cg) sweep(cg.base);
    b = 'base' in cg ? { kind: 'cgroup', base: cg.base } : { kind: 'none', why: `root is exempt from RLIMIT_NPROC and ${cg.why}` };
  }
  decided.set(uid, b);
  return b;
}

let serial = 0;

let hard: number | null | undefined;

/** This process's hard RLIMIT_NPROC, which a sandbox it starts inherits and cannot raise; null when unlimited or unknown. Read once. */
function hardNproc(): number | null {
  if (hard === undefined) hard = readHardNproc();
  return hard;
}

function readHardNproc(): number | null {
  try {
    const h = /^Max processes\s+\S+\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return h && /^\d+$/.test(h) ? Number(h) : null;
  } catch {
    return null;
  }
}

// Sets soft and hard limit, then becomes the command. bash and most shells call it -u; dash -p.
const limitScript = (n: number) => `ulimit -u ${n} 2>/dev/null || ulimit -p ${n} || exit 125; exec "$@"`;

/** What one start needs for `count` processes at most; the caller releases it once the sandbox has ended. */
export function startBound(b: ProcessBound, count: number): StartBound {
  if (b.kind === 'rlimit') return { cgroup: null, inner: [SHELL, '-c', limitScript(Math.min(count, hardNproc() ?? count)), 'sh'], release: () => {} };
  if (b.kind === 'none') return NONE;
  const dir = join(b.base, `shadowcode-${process.pid}-${++serial}`);
  mkdirSync(dir);
  try {
    writeFileSync(join(dir, 'pids.max'), String(count));
  } catch (err) {
    rmdirSync(dir);
    throw err;
  }
  return { cgroup: join(dir, 'cgroup.procs'), inner: [], release: () => removeCgroup(dir, 0) };
}

/**
 * Runs `start` (a synchronous spawn) with this process in the start's cgroup (`procs`, its
 * cgroup.procs), and puts it back in its own cgroup, the parent of that one, right after: the
 * child is forked inside, so it and everything it starts count against pids.max, and this
 * process's own threads count there only for the fork. A join that fails throws before anything
 * starts. Joining was a `/bin/sh` that wrote its pid there and exec'd bwrap: an exec per start
 * (about 3.5 ms on a 2-CPU VM) for two writes. Without a cgroup, just `start()`.
 */
export function inCgroup<T>(procs: string | null | undefined, start: () => T): T {
  if (!procs) return start();
  joinCgroup(procs);
  try {
    return start();
  } finally {
    leaveCgroup(procs);
  }
}

/** Moves this process (all its threads) into the start's cgroup; throws when it cannot. */
export function joinCgroup(procs: string): void {
  writeFileSync(procs, String(process.pid));
}

/** Moves this process back to its own cgroup: the parent of the start's (startBound makes it there). */
export function leaveCgroup(procs: string): void {
  try {
    writeFileSync(join(dirname(dirname(procs)), 'cgroup.procs'), String(process.pid));
  } catch {
    // Cannot happen for root going back to the cgroup it came from; if it did, this process would stay
    // in the start's cgroup (its forks counted there, the folder kept) until it ends.
  }
}

// The last processes of a sandbox leave its cgroup a moment after bwrap has been reaped:
// until then rmdir says EBUSY. Tried again a little later, then left to the sweep.
const RETRY_MS = 20;
const RETRIES = 100;

function removeCgroup(dir: string, tries: number): void {
  try {
    rmdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || tries >= RETRIES) return;
    setTimeout(() => removeCgroup(dir, tries + 1), RETRY_MS).unref();
  }
}

/** The process bound in words, for status and doctor: the same for root and a user where it holds (docs/sandbox.md says how). */
export function describeBound(b: ProcessBound, count: number): string {
  return b.kind === 'none' ? `no process bound: ${b.why}` : `at most ${count} processes`;
}
