/*
 * Cancel requests: cancelling a job that another process runs.
 *
 *   jobs cancel ID (CLI, console, library; any process) ─► requestCancel: a row in
 *   cancel_requests + a 'cancel_requested' event ─► runner gone? settled at once (cancelled)
 *   the process running the job (its Jobs, or the shared engine's) ─► cancelsFor(its live
 *   ids) every approval_poll_ms while it has live jobs ─► its own cancel path
 *   (process group TERM ─► grace ─► KILL, pending approvals cancelled) ─► cancelled
 *   the requester ─► awaitEnd: re-reads the row until it ended, or gives up (bounded)
 *
 * The row is the request: nothing is sent to the owner, so an owner that no socket
 * reaches (a server's own temporary engine) is reached all the same.
 */
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { ACTIVE, addEvent, getJob, type JobRow, now } from './job-events.js';
import { ownerPid, pidRunning, settleJob } from './owners.js';

/** Records a request to cancel job `id` of `project`; refused for a job that already ended. */
export function requestCancel(db: Db, project: string, id: string, by: string): JobRow {
  db.transaction(() => {
    const job = getJob(db, id);
    if (!job || job.project !== project) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)} in ${project}`);
    if (!['queued', 'running', 'waiting_approval'].includes(job.state)) throw new ScError('SC_JOB_NOT_RUNNING', `job ${id} has already ended (${job.state}); there is nothing to cancel`);
    const added = sql(db, 'INSERT OR IGNORE INTO cancel_requests (job_id, requested_at, requested_by) VALUES (?, ?, ?)').run(id, now(), by).changes;
    if (added) addEvent(db, id, 'cancel_requested', { by });
  }).immediate();
  settleIfRunnerGone(db, id);
  return getJob(db, id) as JobRow;
}

/** A job whose runner process is gone cannot hear the request: it is settled here. */
export function settleIfRunnerGone(db: Db, id: string): void {
  const r = sql(
    db,
    `SELECT j.id, j.kind, j.owner,
       (SELECT json_extract(e.body, '$.pid') FROM job_events e WHERE e.job_id = j.id AND e.kind = 'engine' LIMIT 1) AS engine_pid
     FROM jobs j WHERE j.id = ? AND j.state IN ${ACTIVE}`,
  ).get(id) as { id: string; kind: string; owner: string; engine_pid: number | null } | undefined;
  if (!r) return;
  const pid = r.engine_pid ?? ownerPid(r.owner);
  if (pidRunning(pid)) return;
  settleJob(db, r, 'owner_gone', { owner: r.owner, pid, runner: r.engine_pid !== null ? 'engine' : 'owner' }, `cancelled; what ran it (pid ${pid}) was already gone`);
}

/** Which of these live jobs someone asked to cancel. */
export function cancelsFor(db: Db, ids: readonly string[]): string[] {
  if (ids.length === 0) return [];
  return (sql(db, 'SELECT job_id FROM cancel_requests WHERE job_id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as Array<{ job_id: string }>).map((r) => r.job_id);
}

/** Waits until the job has ended (re-reading the store every pollMs), or until timeoutMs; returns the row as it stands. */
export async function awaitEnd(db: Db, id: string, pollMs: number, timeoutMs: number): Promise<{ job: JobRow; ended: boolean }> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    settleIfRunnerGone(db, id);
    const job = getJob(db, id) as JobRow;
    const ended = !['queued', 'running', 'waiting_approval'].includes(job.state);
    if (ended || Date.now() >= end) return { job, ended };
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
