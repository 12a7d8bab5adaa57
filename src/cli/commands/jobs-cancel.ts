/*
 * shadowcode jobs cancel ID: cancels a task or job of the project, whichever process runs it
 * (ops/jobs.ts cancelJob: a request in the store that the running process acts on, waited
 * for a bounded time), and says how it ended.
 */
import { cancelJob } from '../../ops/jobs.js';
import type { Ctx } from '../context.js';
import type { CommandSpec, Output } from '../spec.js';

async function cancel(ctx: Ctx, id: string): Promise<Output> {
  ctx.requireWorkspace('jobs cancel');
  const { job, ended, runner_gone } = await cancelJob(ctx.ops, id);
  if (runner_gone) return { data: { job, ended }, text: `job ${id} cancelled (the process that ran it was already gone)` };
  const text = ended ? `job ${id} ${job.state}` : `cancel of job ${id} requested; it is still ${job.state} and ends as soon as the process running it acts on the request (follow with shadowcode jobs)`;
  return { data: { job, ended }, text };
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
  run: (ctx, { args }) => cancel(ctx, args[0] as string),
};
