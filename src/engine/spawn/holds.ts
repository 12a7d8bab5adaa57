/*
 * Protected project paths that do not exist yet. The project is bound
 * read-write, and bwrap can only mount over a path that exists, so without
 * this an approved command could create `.claude/settings.json` or
 * `.git/config` and the user's next git or host would run it. Before the
 * sandbox starts, each missing protected path gets an empty directory as a
 * placeholder in the project (also for a file name such as `.mcp.json`: nothing
 * can be written to it inside, and a snapshot of the project's files does not see
 * an empty directory), which the sandbox then binds read-only like any protected path
 * that exists. Once no sandbox in that project needs them, each placeholder is
 * removed if it is still the very one made here and still empty; a process keeps
 * them `linger` ms after its last sandbox there ended (limits.sandbox.placeholder_linger_ms),
 * so that a burst of starts (a test run, the commands of one turn) makes and removes them
 * once instead of per start, and a command's result never waits on their removal.
 *
 *   holdProtected(project, paths, registry dir, limits)
 *       ─► this process already holds the project (a sandbox runs, or its last one ended less
 *          than linger ago) and every path exists: count it, done
 *       ─► lock ─► drop claims of dead processes ─► claim it for this process
 *       ─► each missing path: mkdir, record its device and inode
 *       ─► unlock ─► release()
 *   release() (once the sandboxed process and everything in it is gone)
 *       ─► not this process's last sandbox in the project: done
 *       ─► linger: keep the claim; a start in the project meanwhile takes it over, otherwise
 *          after linger ms (or when this process exits, or a stop signal that would end it
 *          comes, whichever is first):
 *       ─► lock ─► drop this process's claim and dead ones ─► still claimed: leave all
 *       ─► none left: each recorded placeholder still the same inode ─► rmdir
 *          (which fails when something was put in it: it stays)
 *       ─► forget the records ─► unlock
 *
 * The registry is one JSON file per project in the profile (0700),
 * `sandbox-holds.<hash>.json`, beside a lock file, both gone when nothing is
 * held: the CLI and the shared engine may start sandboxes in the same
 * project at once, and a placeholder another sandbox still stands on must not
 * go (removing a mount point in another mount namespace detaches the mount,
 * and the path would be writable there again). The lock is a file made with O_EXCL; a start
 * waits for it at most `placeholder_lock_wait_ms` and then fails, starting nothing, and one older
 * than `placeholder_lock_stale_ms` was left by a process that died holding it.
 */
import { pidRunning } from '../owners.js';
import { onStopSignal } from '../../util/stop-signals.js';
import { closeSync, constants, lstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmdirSync, type Stats, unlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScError } from '../../errors.js';
import type { Limits } from '../../../gen/types/limits.js';

interface Placeholder {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
}

interface Registry {
  project: string;
  /** Processes with a sandbox in the project now. */
  claims: Array<{ pid: number }>;
  made: Placeholder[];
}

/** The limits a hold goes by (limits.sandbox). */
export type HoldLimits = Pick<Limits['sandbox'], 'placeholder_linger_ms' | 'placeholder_lock_wait_ms' | 'placeholder_lock_stale_ms'>;
const pause = new Int32Array(new SharedArrayBuffer(4));
let privateDir: string | null = null;
/**
 * This process's sandboxes per registry file: only the first takes a claim, only the last gives it
 * back, `linger` ms after it ended (`giveBack` is then pending; a new start cancels it).
 */
const local = new Map<string, { count: number; timer: NodeJS.Timeout | null; giveBack: (() => void) | null }>();
let exitHook = false;
/** Set while a claim lingers: a stop signal then gives every lingering claim back before it ends the process. */
let offSignals: (() => void) | null = null;

/**
 * A stop signal while claims linger: where nothing else listens (a command that has no stop
 * handling, or whose handling is over, e.g. while it exports telemetry) Node would end the
 * process on the spot and skip the exit hook, leaving the placeholders. They go first, then
 * the signal ends the process as it would have; where the command listens, it carries on.
 */
function onLingerSignal(signal: NodeJS.Signals): void {
  for (const f of [...local.keys()]) giveBackNow(f);
  lingerWatch();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

/** Listens for the stop signals exactly while some claim of this process lingers. */
function lingerWatch(): void {
  const lingering = [...local.values()].some((h) => h.count === 0 && h.giveBack !== null);
  if (lingering && !offSignals) offSignals = onStopSignal(onLingerSignal);
  else if (!lingering && offSignals) {
    offSignals();
    offSignals = null;
  }
}

/**
 * Gives back a lingering claim now (its timer ran out, or the process exits). Never throws: it runs
 * from a timer or the exit hook, where a registry locked past the wait (or a profile removed
 * meanwhile) must not end the process; the placeholders are then left, as a killed process leaves
 * them, for the next sandbox in the project to remove.
 */
function giveBackNow(file: string): void {
  const held = local.get(file);
  if (!held || held.count > 0 || !held.giveBack) return;
  if (held.timer) clearTimeout(held.timer);
  local.delete(file);
  lingerWatch();
  try {
    held.giveBack();
  } catch {
    /* left for the next sandbox in this project */
  }
}

/** Where the registry lives: the profile itself (plain files, gone when nothing is held); without one (an in-memory store) a directory private to this process. */
function registryDir(profileDir: string | null): string {
  return profileDir ?? (privateDir ??= mkdtempSync(join(tmpdir(), 'shadowcode-holds-')));
}

const alive = pidRunning;

function withLock<T>(lock: string, L: HoldLimits, fn: () => T): T {
  const until = Date.now() + L.placeholder_lock_wait_ms;
  for (;;) {
    try {
      // A file made with O_EXCL: on a busy disk far cheaper than a directory.
      closeSync(openSync(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const st = lstatSync(lock, { throwIfNoEntry: false });
      if (st && Date.now() - st.mtimeMs > L.placeholder_lock_stale_ms) {
        try {
          unlinkSync(lock);
        } catch {
          /* another waiter took it first */
        }
        continue;
      }
      if (Date.now() > until) throw new ScError('SC_SANDBOX_SETUP_FAILED', `the protected paths of the project are locked by another process (${lock}); nothing was started`);
      Atomics.wait(pause, 0, 0, 2);
    }
  }
  try {
    return fn();
  } finally {
    unlinkSync(lock);
  }
}

function load(file: string, project: string): Registry {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Registry;
    if (r.project === project && Array.isArray(r.claims) && Array.isArray(r.made)) return r;
  } catch {
    /* none yet, or unreadable: start again (placeholders it named are then left, never wrongly removed) */
  }
  return { project, claims: [], made: [] };
}

function save(file: string, r: Registry): void {
  if (r.claims.length === 0 && r.made.length === 0) {
    try {
      unlinkSync(file);
    } catch {
      /* already gone */
    }
    return;
  }
  // In place, under the lock (every reader takes it too). A torn file after a crash reads as empty:
  // the placeholders it named are then left in the project, never wrongly removed.
  writeFileSync(file, JSON.stringify(r), { mode: 0o600 });
}

/** Makes one missing path (and missing folders above it) an empty folder, recording each made and what it saw there; stops at the first that cannot be made. */
function makeMissing(project: string, rel: string, made: Placeholder[], seen: Map<string, Stats>): void {
  const parts = rel.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const abs = join(project, ...parts.slice(0, i));
    try {
      const there = lstatSync(abs, { throwIfNoEntry: false });
      if (there) {
        seen.set(abs, there);
        continue;
      }
      mkdirSync(abs, { mode: 0o755 });
      const st = lstatSync(abs);
      seen.set(abs, st);
      made.push({ path: abs, dev: st.dev, ino: st.ino });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      // Raced by someone else's create: theirs, bound read-only as it is. Not writable for us (a
      // read-only project), under a file (.git as a worktree's file), or no project at all (the
      // start fails on its own): the command cannot make it either.
      if (['EEXIST', 'EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'ENOENT'].includes(code)) return;
      throw new ScError('SC_SANDBOX_SETUP_FAILED', `cannot hold ${abs} read-only for the sandbox: ${code || (err as Error).message}; nothing was started`);
    }
  }
}

/** Removes a placeholder only while it is the one we made and holds nothing. */
function removeIfUntouched(p: Placeholder): void {
  const st = lstatSync(p.path, { throwIfNoEntry: false });
  if (!st || st.dev !== p.dev || st.ino !== p.ino || !st.isDirectory()) return;
  try {
    rmdirSync(p.path); // ENOTEMPTY: someone put something in it; it stays
  } catch {
    /* not empty, or already gone */
  }
}

export interface Hold {
  /** The placeholders this hold made (absolute paths), for the record. */
  readonly made: readonly string[];
  /** Each held path (absolute) and folder above it as this hold found or made it, with its lstat: the command line need not look again. */
  readonly seen: ReadonlyMap<string, Stats>;
  /** Call once the sandboxed process and everything inside it has ended. Idempotent. */
  release(): void;
}

/** Each project's registry name: a hash of its path, worked out once (a name only, no file system fact). */
const keys = new Map<string, string>();
const keyOf = (project: string): string => {
  let key = keys.get(project);
  if (key === undefined) keys.set(project, (key = createHash('sha256').update(project).digest('hex').slice(0, 32)));
  return key;
};

/** Makes sure every protected path in the project exists before a sandbox binds it read-only. */
export function holdProtected(project: string, paths: readonly string[], profileDir: string | null, L: HoldLimits): Hold {
  const linger = L.placeholder_linger_ms;
  const dir = registryDir(profileDir);
  const key = keyOf(project);
  const file = join(dir, `sandbox-holds.${key}.json`);
  const lock = join(dir, `sandbox-holds.${key}.lock`);
  const made: Placeholder[] = [];
  const mine = local.get(file);
  const lingering = mine?.timer ? mine.giveBack : null;
  if (mine?.timer) {
    // The last sandbox here ended less than linger ago: this start takes its claim over.
    clearTimeout(mine.timer);
    mine.timer = null;
    mine.giveBack = null;
    lingerWatch();
  }
  let failure: unknown = null;
  // Another sandbox of this process already holds the project: while it runs nothing is removed,
  // so when every path is there no file needs to change.
  const seen = new Map<string, Stats>();
  const there = (rel: string) => {
    const abs = join(project, rel);
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (st) seen.set(abs, st);
    return st !== undefined;
  };
  if (mine && paths.every(there)) mine.count++;
  else {
    try {
      withLock(lock, L, () => {
        const r = load(file, project);
        r.claims = r.claims.filter((c) => c.pid !== process.pid && alive(c.pid));
        r.claims.push({ pid: process.pid });
        try {
          for (const rel of paths) makeMissing(project, rel, made, seen);
        } catch (err) {
          failure = err;
        } finally {
          // Recorded even if a later path failed, so what was made is still removed.
          r.made = [...r.made.filter((m) => !made.some((n) => n.path === m.path)), ...made];
          save(file, r);
        }
      });
    } catch (err) {
      // Not taken (the registry's lock could not be had): the linger this start interrupted goes on, so
      // its claim is still given back in time, or at exit.
      if (mine && mine.count === 0 && lingering) {
        mine.giveBack = lingering;
        mine.timer = setTimeout(() => giveBackNow(file), linger);
        mine.timer.unref();
        lingerWatch();
      }
      throw err;
    }
    if (mine) mine.count++;
    else local.set(file, { count: 1, timer: null, giveBack: null });
  }
  let released = false;
  /** The release; `wait` is how long an unused claim stays (none for a start that failed). */
  const releaseAfter = (wait: number) => {
    if (released) return;
    released = true;
    const held = local.get(file);
    if (held && --held.count > 0) return;
    if (held && wait > 0) {
      held.giveBack = giveBack;
      held.timer = setTimeout(() => giveBackNow(file), wait);
      held.timer.unref();
      lingerWatch();
      if (!exitHook) {
        exitHook = true;
        // What still lingers goes with the process (a signal the process handles ends it through exit too).
        process.on('exit', () => {
          for (const f of [...local.keys()]) giveBackNow(f);
        });
      }
      return;
    }
    local.delete(file);
    giveBack();
  };
  const hold: Hold = {
    made: made.map((m) => m.path),
    seen,
    release: () => releaseAfter(linger),
  };
  function giveBack(): void {
    withLock(lock, L, () => {
      const r = load(file, project);
      r.claims = r.claims.filter((c) => c.pid !== process.pid && alive(c.pid));
      if (r.claims.length === 0) {
        // Deepest first: a folder made above a placeholder goes after it.
        for (const p of [...r.made].sort((a, b) => b.path.length - a.path.length)) removeIfUntouched(p);
        r.made = [];
      }
      save(file, r);
    });
  }
  if (failure) {
    // Nothing starts: give the claim (and what was made, unless another sandbox needs it) straight back.
    releaseAfter(0);
    throw failure;
  }
  return hold;
}
