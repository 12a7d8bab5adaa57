/*
 * shadowcode jobs cancel ID: cancels a task or job of the project, whichever process runs it.
 *
 *   open (dead owners' jobs settled first) ─► the job, in this project, not ended
 *   ─► gate cli:jobs.cancel ─► cancel request recorded in the store (a job whose runner is gone
 *   is settled at once) ─► the runner notices within one approval poll and cancels it
 *   (process group TERM ─► grace ─► KILL) ─► wait, bounded, until the job has ended
 *
 * The request stands even if the wait gives up: the runner still acts on it, and the
 * output says the job had not ended yet.
 */
import { awaitEnd, requestCancel } from '../../engine/cancel-requests.js';
import { settleWatches } from '../../engine/owners.js';
import { getJob, now } from '../../engine/job-events.js';
import { sql } from '../../store/db.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Ctx } from '../context.js';
import type { CommandSpec, Output } from '../spec.js';

/** What the console and the library run too. */
export async function cancelJob(ctx: Ctx, id: string): Promise<Output> {
  const project = ctx.requireWorkspace('jobs cancel');
  const opened = now();
  // Opening the profile settles the jobs of dead processes: this job may have been one of them just now.
  const db = ctx.db();
  const job = getJob(db, id);
  if (!job || job.project !== project) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)} in ${project}`);
  const l = ctx.policy().limits;
  const justSettled = job.state === 'cancelled' && sql(db, "SELECT 1 FROM job_events WHERE job_id = ? AND kind = 'owner_gone' AND at >= ?").get(id, opened) !== undefined;
  await enforce(ctx.gate(), ctx.request('cli:jobs.cancel', { resource: { kind: 'job', id, owner: job.owner, project }, args: { job_id: id } }), () =>
    justSettled ? job : requestCancel(db, project, id, ctx.owner),
  );
  if (justSettled) return { data: { job, ended: true }, text: `job ${id} cancelled (the process that ran it was already gone)` };
  // Long enough for the runner to notice (a poll) and for a process group's TERM grace and KILL.
  const bound = l.jobs.approval_poll_ms * 25 + l.runners.kill_grace_ms * 2;
  const { job: after, ended } = await awaitEnd(db, id, l.jobs.approval_poll_ms / 2, bound);
  // Settled here because its process was gone: what it changed so far is recorded on it now.
  if (ended) settleWatches(db, ctx.policy());
  const text = ended ? `job ${id} ${after.state}` : `cancel of job ${id} requested; it is still ${after.state} and ends as soon as the process running it acts on the request (follow with shadowcode jobs)`;
  return { data: { job: after, ended }, text };
}

export const command: CommandSpec = {
  name: 'jobs cancel',
  summary: 'Cancel a job of the project (a task or a test run), whichever process runs it',
  description:
    "Cancel one queued, waiting or running task or test job of the selected project (ids from shadowcode jobs), whichever terminal, MCP server or engine runs it. The request is recorded in the profile's store; the process running the job notices it within a moment and stops it as it would on its own cancel (the command's process group is sent TERM, then KILL after a grace period; pending approvals are cancelled). A job whose process is already gone is marked cancelled at once. The command waits a few seconds for the job to end and prints it; --json prints {job, ended}. A job that has already ended is refused with SC_JOB_NOT_RUNNING.",
  options: [],
  args: [{ name: 'ID', required: true, description: 'the job id (a task or a test run)' }],
  examples: ['shadowcode --project ~/src/app jobs cancel job_0mh3k2x1a000f3c9d2e7b1'],
  workspace: 'required',
  run: (ctx, { args }) => cancelJob(ctx, args[0] as string),
};
