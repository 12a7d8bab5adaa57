/*
 * Owners and reaping: every job belongs to the process whose connection (or
 * command) submitted it, and runs in that process or in the shared engine. A
 * job whose runner is gone can never run or finish: its queue went with it.
 *
 *   owner label  <transport>:<pid>:…  (stdio, http, cli; detached:<engine pid>:…)
 *   runner       the shared engine's pid when the job has an 'engine' event, else the owner's
 *   settleDeadOwners(db, policy), on every open of the profile by any command:
 *     reapOrphans ─► each unfinished job whose runner is not running ─► pending approvals
 *                    cancelled, job cancelled, 'owner_gone' (and an answer for a task)
 *     settleWatches ─► each change watch whose job ended without closing it (its owner
 *                    died): what changed since its last look recorded on its task, the
 *                    baseline closed, the coding CLI's run dir it names removed
 *     sweepRunDirs ─► <tmp>/shadowcode-run-<pid>-* of processes that are gone, removed
 *                    (on the process's first open only)
 *   writerOf(db, project) ─► the build task holding the project's one writer slot
 *
 * A zombie (killed, not yet collected by its parent) counts as gone: it runs nothing.
 */
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Policy } from '../policy/load.js';
import { type Db, sql } from '../store/db.js';
import { cancelPending } from './approvals.js';
import { observeJob } from './change-watch.js';
import { ACTIVE, addEvent, setState } from './job-events.js';

const readStat = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'latin1');

/** Whether process `pid` exists and is not a zombie. `stat` reads /proc/<pid>/stat (a test replaces it). */
export function pidRunning(pid: number, stat: (pid: number) => string = readStat): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    // Linux: the state follows the parenthesised command name, which may itself hold ") ".
    const text = stat(pid);
    return !/^Z/.test(text.slice(text.lastIndexOf(')') + 2));
  } catch (err) {
    // A zombie collected by its parent between the two probes has no /proc entry any more: it is
    // gone. Counting it as running once left a dead engine's job unsettled while the server
    // reported the engine gone.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat')) return false;
    return true; // no /proc here: the signal probe is all there is
  }
}

/** The pid an owner label names (`stdio:1234`, `cli:1234:ab12`, `detached:1234:…`). */
export function ownerPid(owner: string): number {
  return Number(/^\w+:(\d+)/.exec(owner)?.[1]);
}

export function alive(owner: string): boolean {
  return pidRunning(ownerPid(owner));
}

/**
 * Marks one unfinished job cancelled because what ran it is gone. A task also gets its
 * answer, so whoever reads it later learns why it ended.
 */
export function settleJob(db: Db, job: { id: string; kind: string }, event: string, body: Record<string, unknown>, message: string): boolean {
  return db.transaction(() => {
    const changed = sql(db, `UPDATE jobs SET state = 'cancelled', updated_at = ? WHERE id = ? AND state IN ${ACTIVE}`).run(new Date().toISOString(), job.id).changes;
    if (changed === 0) return false;
    cancelPending(db, job.id, 'engine');
    addEvent(db, job.id, event, body);
    if (job.kind === 'agent') addEvent(db, job.id, 'answer', { state: 'cancelled', summary: null, reason: { code: 'SC_CANCELLED', message }, usage: null, steps: null });
    addEvent(db, job.id, 'state', { state: 'cancelled' });
    return true;
  }).immediate();
}

/** Jobs whose runner process is gone can never run: their queue died with it. Their change watches are settled too. */
export function reapOrphans(db: Db, policy: Policy): number {
  const rows = sql(
    db,
    `SELECT j.id, j.kind, j.owner,
       (SELECT json_extract(e.body, '$.pid') FROM job_events e WHERE e.job_id = j.id AND e.kind = 'engine' LIMIT 1) AS engine_pid
     FROM jobs j WHERE j.state IN ${ACTIVE}`,
  ).all() as Array<{ id: string; kind: string; owner: string; engine_pid: number | null }>;
  let n = 0;
  for (const r of rows) {
    const pid = r.engine_pid ?? ownerPid(r.owner);
    if (pidRunning(pid)) continue;
    const by = r.engine_pid !== null ? 'the shared engine' : 'its owner';
    if (settleJob(db, r, 'owner_gone', { owner: r.owner, pid, runner: r.engine_pid !== null ? 'engine' : 'owner' }, `${by} (pid ${pid}) is gone, so the task can never finish`)) n++;
  }
  settleWatches(db, policy);
  return n;
}

/**
 * Change watches whose job has ended but which were never closed: the process that ran the
 * job died (a SIGKILL, a crash) before its last look. The changes made so far are recorded
 * on the task from the durable baseline, so review and rollback see them; then the baseline
 * goes, and the coding CLI's run dir (holding its MCP config) with it. A failure leaves the
 * watch for the next open to try again.
 */
export function settleWatches(db: Db, policy: Policy): number {
  const rows = sql(
    db,
    `SELECT w.id, w.job_id, w.project, w.run_dir, j.owner, j.ceiling, j.state,
       (SELECT e.kind || ' ' || e.body FROM job_events e WHERE e.job_id = w.id AND e.kind IN ('owner_gone', 'engine_gone') ORDER BY e.seq DESC LIMIT 1) AS gone
     FROM watches w LEFT JOIN jobs j ON j.id = w.id WHERE j.id IS NULL OR j.state NOT IN ${ACTIVE}`,
  ).all() as Array<{ id: string; job_id: string; project: string; run_dir: string | null; owner: string | null; ceiling: 'read_only' | 'workspace' | 'elevated' | null; gone: string | null }>;
  let n = 0;
  for (const r of rows) {
    try {
      if (r.owner === null || r.ceiling === null) sql(db, 'DELETE FROM watches WHERE id = ?').run(r.id);
      else {
        const pid = r.gone ? /"pid":(\d+)/.exec(r.gone)?.[1] : undefined;
        const died = r.gone?.startsWith('engine_gone') ? 'the shared engine that ran it stopped or died' : `what ran it${pid ? ` (pid ${pid})` : ''} died`;
        observeJob({ policy, db: () => db }, { id: r.id, owner: r.owner, project: r.project, ceiling: r.ceiling }, { id: r.id, jobId: r.job_id, project: r.project }, { via: 'owner_gone', why: `changed while the task ran, before ${died} and could record it` }, { close: true });
      }
      n++;
    } catch {
      continue; // the store is busy: the next open settles it
    }
    if (r.run_dir) removeRunDir(r.run_dir);
  }
  return n;
}

/** A run dir named in our store: removed only if it is one of ours and its process is gone. */
function removeRunDir(path: string): void {
  const m = RUN_DIR.exec(basename(path));
  if (!m || pidRunning(Number(m[1]))) return;
  try {
    const st = lstatSync(path);
    const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
    if (!st.isDirectory() || st.uid !== uid) return;
    rmSync(path, { recursive: true, force: true });
  } catch {
    /* already gone */
  }
}

const RUN_DIR = /^shadowcode-run-(\d+)-/;

/** A private temp dir for one coding-CLI run, named by this process so a later open can clean up after a kill. */
export function makeRunDir(): string {
  return mkdtempSync(join(tmpdir(), `shadowcode-run-${process.pid}-`));
}

/** Removes run dirs of this user whose process is gone (a SIGKILL leaves them behind). */
export function sweepRunDirs(dir = tmpdir()): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  let n = 0;
  for (const name of names) {
    const m = RUN_DIR.exec(name);
    if (!m || pidRunning(Number(m[1]))) continue;
    const path = join(dir, name);
    try {
      // Only a real directory of ours: never a link, never another user's.
      const st = lstatSync(path);
      if (!st.isDirectory() || st.uid !== uid) continue;
      rmSync(path, { recursive: true, force: true });
      n++;
    } catch {
      /* gone meanwhile, or not ours to remove */
    }
  }
  return n;
}

let swept = false;

/**
 * What every open of the profile does first: settle what dead processes left behind. The run
 * dirs are swept on a process's first open only: listing the temp dir costs in proportion to
 * everything in it, and a host that opens the profile again and again (the library, the tests)
 * paid that on every open. A dir of a process killed later is removed by the next process that
 * opens the profile; the jobs such a process leaves are still settled on every open.
 */
export function settleDeadOwners(db: Db, policy: Policy): { jobs: number; dirs: number } {
  const jobs = reapOrphans(db, policy);
  if (swept) return { jobs, dirs: 0 };
  swept = true;
  return { jobs, dirs: sweepRunDirs() };
}

/** Whether a build task of this project (other than `id`) holds the writer slot, in any process. */
export function writerOf(db: Db, project: string, id: string): { id: string; owner: string } | undefined {
  return sql(
    db,
    `SELECT j.id, j.owner FROM jobs j JOIN job_events e ON e.job_id = j.id AND e.kind = 'submitted'
     WHERE j.project = ? AND j.kind = 'agent' AND j.state IN ('running', 'waiting_approval') AND j.id != ?
       AND json_extract(e.body, '$.mode') = 'build' LIMIT 1`,
  ).get(project, id) as { id: string; owner: string } | undefined;
}
