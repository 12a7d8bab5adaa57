/*
 * A change is a change whoever made it: what an approved command, a test job, a
 * background process or a coding CLI changes in the project is recorded on its
 * task exactly like a write tool's change (checkpoint, change row, review, why,
 * rollback, the next approval's changed files and warning).
 *
 *   open     (before the task's first command, test, background process or CLI run)
 *            walk the project, contents kept ─► a durable baseline in the store
 *            (watches + watch_files), with the .gitignore rules as read now
 *   observe  (at each approval of the task, after each command and test, when a
 *            background process stops or ends, at the task's end, and by whoever
 *            settles a task whose owner died)
 *            walk again; a file whose stamp is unchanged is not read (snapshot.ts)
 *            ─► each difference from what was last seen:
 *                 a change some job recorded since (a write tool, a rollback) ─► that job's
 *                 else ─► a checkpoint from the baseline (unless the job has one)
 *                         + an applied change row, `why` naming what ran meanwhile
 *            ─► what was seen is updated; a changed file's kept content is dropped
 *   close    one last observation, then the baseline is deleted
 *
 * The baseline is in the store, not in memory, so a task whose owner is SIGKILLed
 * still has it: the next process that opens the profile records the changes made
 * so far (owners.ts). Every step is an executor of its own gate decision
 * (job:observe): recording changes is a state change like any other.
 *
 * A watch records on `jobId`: a task's own watch records on the task; a test job
 * with a task records on that task (through the task's watch while it runs, else
 * its own for the run); a test job without one records on itself.
 */
import { existsSync, lstatSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { admit, type GateEnv } from '../policy/gate.js';
import { profileInside, protectedByPattern } from '../policy/protected-paths.js';
import type { Policy } from '../policy/load.js';
import { type Db, sql } from '../store/db.js';
import { jobObserveRequest, trustOf } from '../policy/requests.js';
import { assertTicket, type GateTicket, type Level } from '../ticket.js';
import { newId } from '../util/ids.js';
import { type FileState, readState } from './files.js';
import { addEvent } from './job-events.js';
import { diffSnapshots, type Entry, type Known, type SnapshotLimits, takeSnapshot } from './snapshot.js';

export interface WatchOf {
  /** The watch's id: the job whose processes it watches (a task, or a test job). */
  readonly id: string;
  /** The job its changes are recorded on. */
  readonly jobId: string;
  readonly project: string;
  /** A coding CLI's private run folder, removed by whoever settles the task if its owner dies. */
  readonly runDir?: string;
}

/** What ran while the changes were made: `via` labels events, `why` is the change rows' reason. */
export interface Cause {
  readonly via: string;
  readonly why: string;
}

export interface ObservedChange {
  readonly path: string;
  readonly kind: 'added' | 'modified' | 'deleted';
  /** Recorded as a change of the job (false: seen, but it could not be told from a file that was there before). */
  readonly recorded: boolean;
  /** Its content before the task was kept, so rollback can restore it. */
  readonly restorable: boolean;
}

export interface Observed {
  readonly opened: boolean;
  readonly changes: readonly ObservedChange[];
  /** The walk stopped at a limit: files past it were not compared. */
  readonly truncated: string | null;
  /** At opening: some prior contents were past the limits and not kept. */
  readonly unkept?: string | null;
}

interface WatchRow {
  id: string;
  job_id: string;
  project: string;
  taken_at: string;
  last_seq: number;
  truncated: string | null;
  ignores: string;
  run_dir: string | null;
}

export function snapshotLimits(policy: Policy): SnapshotLimits {
  const r = policy.limits.runners;
  return { snapshot_files: r.snapshot_files, snapshot_bytes: r.snapshot_bytes, snapshot_file_bytes: r.snapshot_file_bytes, snapshot_depth: r.snapshot_depth, gitignore_bytes: policy.limits.files.gitignore_bytes };
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

const maxSeq = (db: Db): number => (sql(db, 'SELECT coalesce(max(seq), 0) AS n FROM changes').get() as { n: number }).n;

export function openWatchOf(db: Db, id: string): WatchRow | undefined {
  return sql(db, 'SELECT * FROM watches WHERE id = ?').get(id) as WatchRow | undefined;
}

/** Opens, observes (and with `close`, ends) one watch; see the header. */
export interface WatchOptions {
  /** Observe once more, then delete the baseline. */
  readonly close?: boolean;
  /** Where the events go (a task's own emit); else straight to the recording job's events. */
  readonly emit?: (kind: string, body: Record<string, unknown>) => void;
}

/** Whether the job already has a changes_limited event for this reason. */
function limitedBefore(db: Db, jobId: string, reason: string): boolean {
  return sql(db, "SELECT 1 FROM job_events WHERE job_id = ? AND kind = 'changes_limited' AND json_extract(body, '$.reason') = ? LIMIT 1").get(jobId, reason) !== undefined;
}

/**
 * The profile's folder in the project, where it lies inside (the store's own file names it):
 * its state.db, WAL and secrets are shadowcode's own writes, never a task's change, and a
 * checkpoint of them would copy the store into itself and make every rollback conflict.
 */
/**
 * What a watch compares even where .gitignore ignores it: a protected path (an ignored
 * `local.mk` still runs), and a name of sandbox.compared_when_ignored_names (Python's
 * bytecode: a planted .pyc runs in place of its source at the next import outside).
 */
const ignoredButCompared = new WeakMap<object, (path: string, isDir: boolean) => boolean>();
function comparedWhenIgnored(policy: Policy): (path: string, isDir: boolean) => boolean {
  let f = ignoredButCompared.get(policy.sandbox);
  if (f) return f;
  const prot = protectedByPattern(policy);
  const glob = (n: string) => n.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*');
  const names = policy.sandbox.compared_when_ignored_names;
  const re = names.length ? new RegExp(`^(?:${names.map(glob).join('|')})$`) : null;
  f = (path, _isDir) => prot(path) || (re !== null && re.test(path.slice(path.lastIndexOf('/') + 1)));
  ignoredButCompared.set(policy.sandbox, f);
  return f;
}

function profileIn(db: Db, project: string): string | null {
  const file = db.name;
  if (!isAbsolute(file)) return null;
  const rel = profileInside(project, dirname(file));
  return rel === '' ? null : rel;
}

export function watchChanges(ticket: GateTicket, db: Db, policy: Policy, watch: WatchOf, cause: Cause | null, opts: WatchOptions = {}): Observed {
  assertTicket(ticket, 'job:observe');
  const limits = snapshotLimits(policy);
  const also = policy.sandbox.compared_when_ignored;
  const row = openWatchOf(db, watch.id);
  const emit = opts.emit ?? ((kind: string, body: Record<string, unknown>) => addEvent(db, watch.jobId, kind, body));
  if (!row) {
    if (opts.close) return { opened: false, changes: [], truncated: null };
    return open(db, watch, limits, also, comparedWhenIgnored(policy), emit);
  }
  if (watch.runDir && row.run_dir !== watch.runDir) sql(db, 'UPDATE watches SET run_dir = ? WHERE id = ?').run(watch.runDir, row.id);
  const seen = sql(db, 'SELECT path, sha, mode, stamp, racy, kept FROM watch_files WHERE watch_id = ?').all(row.id) as Array<{ path: string; sha: string | null; mode: number | null; stamp: string; racy: number; kept: number }>;
  const lastSeq = maxSeq(db);
  if (!isDir(row.project)) {
    // The project is gone (moved, deleted): an empty walk would read as every file deleted.
    emit('changes_unobserved', { reason: `the project folder ${row.project} is gone; what changed in it was not compared` });
    if (opts.close) sql(db, 'DELETE FROM watches WHERE id = ?').run(row.id);
    return { opened: false, changes: [], truncated: null };
  }
  const known = new Map<string, Known>(seen.map((s) => [s.path, { stamp: s.stamp, sha: s.sha, mode: s.mode, racy: s.racy === 1 }]));
  const before = new Map<string, Entry>(seen.map((s) => [s.path, { state: { exists: true, content: null, mode: s.mode, sha: s.sha }, restorable: s.kept === 1, stamp: s.stamp, racy: s.racy === 1 }]));
  const now = takeSnapshot(row.project, limits, { keepContent: false, known, ignores: JSON.parse(row.ignores) as Record<string, string>, alsoCompared: also, comparedWhenIgnored: comparedWhenIgnored(policy), skip: profileIn(db, row.project), mustCompare: known.keys() });
  // Cut short now (a command made more files than are compared): said once per reason, and every
  // later approval of the job says its list is incomplete (command-context.ts).
  if (now.truncated && !limitedBefore(db, row.job_id, now.truncated)) emit('changes_limited', { reason: now.truncated, incomplete: true });
  const diffs = diffSnapshots({ files: before }, now).filter((d) => {
    // Pushed past the file limit by a new file is not deleted: only a file really gone is.
    if (d.kind === 'deleted' && now.truncated) return !existsSync(join(row.project, d.path)) && !isLink(join(row.project, d.path));
    return true;
  });
  const bornBefore = (path: string): boolean => {
    // A baseline cut short could not see every file: an "added" one may have been there all along.
    if (!row.truncated) return false;
    try {
      const born = lstatSync(join(row.project, path)).birthtimeMs;
      return !(born > 0 && born > Date.parse(row.taken_at));
    } catch {
      return true;
    }
  };
  const changes: ObservedChange[] = [];
  const checkpoints: Array<{ path: string; checkpoint_id: string; kind: string }> = [];
  const moved = [...now.files].filter(([path, e]) => {
    const k = known.get(path);
    return k !== undefined && (k.stamp !== e.stamp || k.racy !== e.racy);
  });
  // Nothing to write (the usual look): no write transaction at all.
  if (diffs.length === 0 && moved.length === 0 && !opts.close) return { opened: false, changes, truncated: now.truncated };
  db.transaction(() => {
    if (!openWatchOf(db, row.id)) return; // closed meanwhile by another process
    const at = new Date().toISOString();
    for (const d of diffs) {
      const mine = sql(db, 'SELECT id FROM checkpoints WHERE job_id = ? AND path = ?').get(row.job_id, d.path) as { id: string } | undefined;
      const other = sql(db, "SELECT job_id, after_sha FROM changes WHERE project = ? AND path = ? AND state = 'applied' AND seq > ? ORDER BY seq DESC LIMIT 1").get(row.project, d.path, row.last_seq) as { job_id: string; after_sha: string | null } | undefined;
      const explained = other !== undefined && other.after_sha === d.after_sha && (d.after_sha !== null || d.kind === 'deleted');
      if (explained) {
        // Recorded by whoever made it (this task's write tool, a rollback): the file is what it says.
        // This job may change it later: keep what it holds now as its prior content.
        const keep = !mine && d.kind !== 'deleted' ? stateNow(row.project, d.path, limits.snapshot_file_bytes) : null;
        seeFile(db, row.id, d.path, now.files.get(d.path), keep?.sha === d.after_sha ? keep.content : null);
        continue;
      }
      if (d.kind === 'added' && bornBefore(d.path)) {
        changes.push({ path: d.path, kind: d.kind, recorded: false, restorable: false });
        seeFile(db, row.id, d.path, now.files.get(d.path), null);
        continue;
      }
      let checkpointId = mine?.id;
      let restorable = true;
      if (!checkpointId) {
        checkpointId = newId('ckpt');
        const prior = d.kind === 'added' ? null : (sql(db, 'SELECT content, kept FROM watch_files WHERE watch_id = ? AND path = ?').get(row.id, d.path) as { content: Buffer | null; kept: number } | undefined);
        restorable = d.kind === 'added' || prior?.kept === 1;
        sql(db, 'INSERT INTO checkpoints (id, job_id, project, path, existed, mode, content, sha256, created_at, kept) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
          checkpointId, row.job_id, row.project, d.path, d.kind === 'added' ? 0 : 1, d.before.mode, restorable && prior ? (prior.content ?? Buffer.alloc(0)) : null, d.before.sha, at, restorable ? 1 : 0,
        );
      } else restorable = (sql(db, 'SELECT kept FROM checkpoints WHERE id = ?').get(checkpointId) as { kept: number }).kept === 1;
      sql(db, "INSERT INTO changes (job_id, project, path, kind, state, why, before_sha, after_sha, at) VALUES (?, ?, ?, ?, 'applied', ?, ?, ?, ?)").run(
        row.job_id, row.project, d.path, d.kind === 'deleted' ? 'delete' : 'write', cause?.why ?? 'changed while the task ran', d.before.sha, d.after_sha, at,
      );
      changes.push({ path: d.path, kind: d.kind, recorded: true, restorable });
      checkpoints.push({ path: d.path, checkpoint_id: checkpointId, kind: d.kind });
      // The job holds a checkpoint now: the baseline's copy is no longer needed.
      seeFile(db, row.id, d.path, now.files.get(d.path), null);
    }
    // Unchanged files whose stamp moved (touched, or racy last time): remember the new stamp.
    const update = sql(db, 'UPDATE watch_files SET stamp = ?, racy = ? WHERE watch_id = ? AND path = ?');
    const differing = new Set(diffs.map((d) => d.path));
    for (const [path, e] of moved) if (!differing.has(path)) update.run(e.stamp, e.racy ? 1 : 0, row.id, path);
    for (const c of checkpoints) emit('checkpoint', { ...c, via: cause?.via ?? 'task' });
    if (changes.length) emit('files_changed', { via: cause?.via ?? 'task', why: cause?.why ?? null, changed: changes });
    if (opts.close) sql(db, 'DELETE FROM watches WHERE id = ?').run(row.id);
    else sql(db, 'UPDATE watches SET last_seq = ? WHERE id = ?').run(lastSeq, row.id);
  }).immediate();
  return { opened: false, changes, truncated: now.truncated };
}

function stateNow(project: string, path: string, cap: number): FileState | null {
  try {
    return readState(project, path, cap);
  } catch {
    return null;
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** What the watch knows of a path from now on: its stamp and hash, and content only where still needed. */
function seeFile(db: Db, watchId: string, path: string, e: Entry | undefined, content: Buffer | null): void {
  if (!e) {
    sql(db, 'DELETE FROM watch_files WHERE watch_id = ? AND path = ?').run(watchId, path);
    return;
  }
  sql(db, 'INSERT OR REPLACE INTO watch_files (watch_id, path, sha, mode, stamp, racy, kept, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    watchId, path, e.state.sha, e.state.mode, e.stamp, e.racy ? 1 : 0, content ? 1 : 0, content,
  );
}

function open(db: Db, watch: WatchOf, limits: SnapshotLimits, also: readonly string[], protectedPath: (path: string, isDir: boolean) => boolean, emit: (kind: string, body: Record<string, unknown>) => void): Observed {
  if (!isDir(watch.project)) return { opened: false, changes: [], truncated: `the project folder ${watch.project} is gone` };
  const lastSeq = maxSeq(db);
  const takenAt = new Date().toISOString();
  const snap = takeSnapshot(watch.project, limits, { keepContent: true, alsoCompared: also, comparedWhenIgnored: protectedPath, skip: profileIn(db, watch.project) });
  let opened = false;
  db.transaction(() => {
    if (openWatchOf(db, watch.id)) return; // opened meanwhile
    opened = true;
    sql(db, 'INSERT INTO watches (id, job_id, project, taken_at, last_seq, truncated, ignores, run_dir) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
      watch.id, watch.jobId, watch.project, takenAt, lastSeq, snap.truncated, JSON.stringify(snap.ignores), watch.runDir ?? null,
    );
    const insert = sql(db, 'INSERT INTO watch_files (watch_id, path, sha, mode, stamp, racy, kept, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    for (const [path, e] of snap.files) insert.run(watch.id, path, e.state.sha, e.state.mode, e.stamp, e.racy ? 1 : 0, e.restorable ? 1 : 0, e.restorable ? e.state.content : null);
    if (snap.truncated) emit('changes_limited', { reason: snap.truncated, incomplete: true });
    if (snap.unkept) emit('changes_limited', { reason: snap.unkept });
  }).immediate();
  return { opened, changes: [], truncated: snap.truncated, unkept: snap.unkept };
}

/** The job a watch acts for, as the gate sees it. */
export interface WatchedJob {
  readonly id: string;
  readonly owner: string;
  readonly project: string;
  readonly ceiling: Level;
}

/**
 * One gate decision (job:observe), then watchChanges. Synchronous, so the settling of a
 * dead owner's task and a job's submission can use it. A failed observation loses
 * nothing: the next one compares against what was last seen.
 */
export function observeJob(gate: GateEnv, job: WatchedJob, watch: WatchOf, cause: Cause | null, opts: WatchOptions = {}): Observed {
  const db = gate.db();
  const task = { owner: job.owner, ceiling: job.ceiling, project: watch.project };
  const [a] = admit(gate, [jobObserveRequest(task, trustOf(db, watch.project), watch.jobId, { watch: watch.id, step: opts.close ? 'close' : 'observe', ...(cause ? { via: cause.via } : {}) })]);
  if (!a || a.denied) throw a?.denied ?? new Error('no decision');
  return watchChanges(a.ticket, db, gate.policy, watch, cause, opts);
}

interface BackgroundSeen {
  readonly id: string;
  readonly argv: string[];
  readonly running: boolean;
}

function backgroundOf(db: Db, taskId: string): BackgroundSeen[] {
  const rows = sql(db, "SELECT kind, body FROM job_events WHERE job_id = ? AND kind IN ('background_started', 'background_stopped', 'background_exited') ORDER BY seq").all(taskId) as Array<{ kind: string; body: string }>;
  const out = new Map<string, BackgroundSeen>();
  for (const r of rows) {
    const b = JSON.parse(r.body) as { id: string; argv?: string[] };
    if (r.kind === 'background_started') out.set(b.id, { id: b.id, argv: b.argv ?? [], running: true });
    else if (out.has(b.id)) out.set(b.id, { ...(out.get(b.id) as BackgroundSeen), running: false });
  }
  return [...out.values()];
}

/** The task's background processes that have not been seen to end. */
export function runningBackground(db: Db, taskId: string): Array<{ id: string; argv: string[] }> {
  return backgroundOf(db, taskId).filter((b) => b.running).map(({ id, argv }) => ({ id, argv }));
}

/** What could have changed files between two looks of a task's watch, as the `why` of those changes. */
export function betweenCause(db: Db, taskId: string): Cause {
  const bg = backgroundOf(db, taskId);
  if (bg.length) {
    const list = bg.map((b) => `${b.id} ${JSON.stringify(b.argv)}`).join(', ');
    return { via: 'background', why: `changed while the task ran, not by its write tools or an approved command: by its background process ${list}, or by something else on this machine` };
  }
  return { via: 'task', why: 'changed while the task ran, not by its write tools or an approved command (by a process it started, or by something else on this machine)' };
}
