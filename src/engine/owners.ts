/*
 * Owners and reaping: every job belongs to the process whose connection (or
 * command) submitted it, and a job whose process is gone can never run, since
 * its queue went with it.
 *
 *   owner label  <transport>:<pid>:…  (stdio, http, cli, detached)
 *   reapOrphans(db) ─► each unfinished job whose owner's process is gone
 *                   ─► pending approvals cancelled, job cancelled, 'owner_gone'
 *   writerOf(db, project) ─► the build task holding the project's one writer slot
 */
import { type Db, sql } from '../store/db.js';
import { cancelPending } from './approvals.js';
import { ACTIVE, addEvent, setState } from './job-events.js';

export function alive(owner: string): boolean {
  const pid = Number(/^\w+:(\d+)/.exec(owner)?.[1]);
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Jobs whose owning process is gone can never run: their queue died with it. */
export function reapOrphans(db: Db): number {
  const rows = sql(db, `SELECT id, owner FROM jobs WHERE state IN ${ACTIVE}`).all() as Array<{ id: string; owner: string }>;
  let n = 0;
  for (const r of rows) {
    if (alive(r.owner)) continue;
    db.transaction(() => {
      cancelPending(db, r.id, 'engine');
      setState(db, r.id, 'cancelled');
      addEvent(db, r.id, 'owner_gone', { owner: r.owner });
    }).immediate();
    n++;
  }
  return n;
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
