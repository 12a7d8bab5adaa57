/*
 * What the page shows at a glance, read from the profile's store: every trusted
 * project, its jobs of every owner (newest first, with a task's answer) and its
 * pending approvals, each with the digest the page sends back when deciding.
 *
 *   projects (trusted) ─► listJobs + jobAnswer (as `jobs`) ─► pendingApprovals (as `approvals`)
 */
import { pendingApprovals } from '../engine/approvals.js';
import { jobAnswer, listJobs } from '../engine/jobs.js';
import type { Db } from '../store/db.js';
import { approvalDigest } from './digest.js';

export function trustedProjects(db: Db): string[] {
  return (db.prepare('SELECT path FROM projects WHERE trusted = 1 ORDER BY path').all() as Array<{ path: string }>).map((r) => r.path);
}

export function snapshot(db: Db, pageSize: number) {
  return {
    projects: trustedProjects(db).map((project) => ({
      path: project,
      jobs: listJobs(db, project, null, { limit: pageSize }).items.map((j) => ({ ...j, answer: j.kind === 'agent' ? jobAnswer(db, j.id) : null })),
      approvals: pendingApprovals(db, { project }).map((a) => ({ ...a, digest: approvalDigest(a) })),
    })),
  };
}

/** A cheap fingerprint of what the snapshot shows (trusted projects, jobs, approvals): a new snapshot is sent only when it moves. */
export function stateMark(db: Db): string {
  const j = db.prepare('SELECT count(*) AS n, max(updated_at) AS m FROM jobs').get() as { n: number; m: string | null };
  const a = db.prepare("SELECT count(*) AS n, max(created_at) AS c, max(decided_at) AS d, sum(state = 'pending') AS p FROM approvals").get() as Record<string, unknown>;
  return JSON.stringify([trustedProjects(db), j.n, j.m, a.n, a.c, a.d, a.p]);
}
