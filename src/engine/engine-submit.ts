/*
 * The one submission path, whatever the kind of job and whichever engine runs it.
 *
 *   submitJob(jobs, owner, project, spec)
 *     kind 'test'  ─► jobs.submitTest  (waits for approval of its exact argv)
 *     kind 'agent' ─► jobs.submitAgent (the agent runtime's queue)
 *
 * The shared engine calls it for a frame from an ownership socket (or a detached
 * request); a temporary engine calls it in the server's own process.
 */
import type { Job } from '../../gen/types/engine-frame.js';
import { ScError } from '../errors.js';
import type { ApprovalRow, JobRow, Jobs } from './jobs.js';

export type JobSpec = Job;

/** Who owns a job: a stdio connection, an HTTP gateway or a CLI invocation, fixed to one project. */
export interface OwnerSpec {
  readonly label: string;
  readonly transport: 'stdio' | 'http' | 'cli';
  readonly project: string;
}

export interface Submitted {
  readonly job: JobRow;
  readonly approval?: ApprovalRow;
}

export function submitJob(jobs: Jobs, owner: string, project: string, spec: JobSpec): Submitted {
  switch (spec.kind) {
    case 'test':
      return jobs.submitTest(owner, project, spec.argv, spec.ceiling, spec.task_id);
    case 'agent':
      // Routed to jobs.submitAgent once the agent runtime's queue is in (see the engine's README section).
      throw new ScError('SC_USAGE', 'agent jobs are not accepted by this engine yet');
  }
}
