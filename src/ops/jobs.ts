/*
 * The project's jobs as operations: a page of them, and a cancel.
 *
 *   listJobPage(ops, {limit?, cursor?})
 *     ─► gate cli:jobs ─► listJobs(project, any owner), newest first ─► each task's answer
 *     ─► {jobs, next_cursor}
 *   cancelJob(ops, id)
 *     ─► open (dead owners' jobs settled first) ─► the job, in this project, not ended
 *     ─► gate cli:jobs.cancel ─► cancel request recorded in the store (a job whose runner is gone
 *        is settled at once) ─► the runner notices within one approval poll and cancels it
 *        (process group TERM ─► grace ─► KILL) ─► wait, bounded, until the job has ended
 *     ─► {job, ended, runner_gone}
 *
 * The request stands even if the wait gives up: the runner still acts on it, and the
 * result says the job had not ended yet.
 */
import { awaitEnd, requestCancel } from '../engine/cancel-requests.js';
import { getJob, jobAnswer, listJobs, now } from '../engine/job-events.js';
import type { JobRow } from '../engine/job-types.js';
import { settleWatches } from '../engine/owners.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { sql } from '../store/db.js';
import { type OpsContext, projectOf } from './context.js';

/** What a finished task said: its summary, or why it stopped. */
export interface Answer {
  readonly state: string;
  readonly summary: string | null;
  readonly reason: { readonly code: string; readonly message: string } | null;
}

export type JobWithAnswer = JobRow & { readonly answer: Answer | null };

export interface JobsQuery {
  /** How many; not a whole number above 0: the default page (limits.inspection), and never past its maximum. */
  readonly limit?: number;
  /** The next_cursor of an earlier page. */
  readonly cursor?: string;
}

export interface JobsPage {
  readonly jobs: JobWithAnswer[];
  readonly next_cursor: string | null;
}

export interface CancelResult {
  readonly job: JobRow;
  readonly ended: boolean;
  /** The process that ran it was already gone: it was settled as cancelled, not asked to stop. */
  readonly runner_gone: boolean;
}

/** A page size as asked, within the policy's inspection page limits. */
export function pageSize(ops: Pick<OpsContext, 'policy'>, asked: number | undefined): number {
  const l = ops.policy.limits.inspection;
  const n = asked ?? l.page_size_default;
  return Number.isInteger(n) && n > 0 ? Math.min(n, l.page_size_max) : l.page_size_default;
}

export async function listJobPage(ops: OpsContext, q: JobsQuery = {}): Promise<JobsPage> {
  const project = projectOf(ops, 'jobs');
  const limit = pageSize(ops, q.limit);
  const db = ops.db();
  const page = await enforce(ops.gate, ops.request('cli:jobs', { args: { limit } }), () => listJobs(db, project, null, { limit, ...(q.cursor !== undefined ? { cursor: q.cursor } : {}) }));
  return { jobs: page.items.map((j) => ({ ...j, answer: j.kind === 'agent' ? (jobAnswer(db, j.id) as Answer | null) : null })), next_cursor: page.next_cursor };
}

export async function cancelJob(ops: OpsContext, id: string): Promise<CancelResult> {
  const project = projectOf(ops, 'jobs cancel');
  const opened = now();
  // Opening the profile settles the jobs of dead processes: this job may have been one of them just now.
  const db = ops.db();
  const job = getJob(db, id);
  if (!job || job.project !== project) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)} in ${project}`);
  const l = ops.policy.limits;
  const justSettled = job.state === 'cancelled' && sql(db, "SELECT 1 FROM job_events WHERE job_id = ? AND kind = 'owner_gone' AND at >= ?").get(id, opened) !== undefined;
  await enforce(ops.gate, ops.request('cli:jobs.cancel', { resource: { kind: 'job', id, owner: job.owner, project }, args: { job_id: id } }), () => (justSettled ? job : requestCancel(db, project, id, ops.owner)));
  if (justSettled) return { job, ended: true, runner_gone: true };
  // Long enough for the runner to notice (a poll) and for a process group's TERM grace and KILL.
  const bound = l.jobs.approval_poll_ms * 25 + l.runners.kill_grace_ms * 2;
  const { job: after, ended } = await awaitEnd(db, id, l.jobs.approval_poll_ms / 2, bound);
  // Settled here because its process was gone: what it changed so far is recorded on it now.
  if (ended) settleWatches(db, ops.policy);
  return { job: after, ended, runner_gone: false };
}
