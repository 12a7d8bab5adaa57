/*
 * The one submission path, whatever the kind of job and whichever engine runs it.
 *
 *   submitJob(jobs, owner, project, spec)
 *     kind 'test'  ─► jobs.submitTest  (waits for approval of its exact argv)
 *     kind 'agent' ─► jobs.submitAgent (the agent runtime's queue)
 *
 * Both go through the gate first (admitJob, action engine:submit): the shared engine
 * for a frame from an ownership socket or a detached request, a temporary engine in
 * the server's own process. The ticket's ceiling can lower the job's, never raise it.
 */
import type { Job } from '../../gen/types/engine-frame.js';
import { ScError } from '../errors.js';
import { enforce, type GateEnv } from '../policy/gate.js';
import { type Asker, submitRequest, submitterPrincipal, trustOf } from '../policy/requests.js';
import type { ApprovalRow } from './approvals.js';
import type { JobRow } from './job-events.js';
import type { Jobs } from './jobs.js';

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
    case 'agent': {
      const mode = spec.mode ?? 'build';
      if (mode !== 'plan' && mode !== 'review' && mode !== 'build') throw new ScError('SC_USAGE', `a task's mode is plan, review or build, not ${JSON.stringify(mode)}`);
      // The owner label says who submitted it (stdio:…, http:…, cli:…); the ceiling was decided by the submitter's gate.
      const kind = owner.split(':')[0];
      const principal = submitterPrincipal(kind === 'stdio' || kind === 'http' || kind === 'cli' ? kind : 'engine', owner, spec.ceiling);
      return { job: jobs.submitAgent({ project, owner, ceiling: spec.ceiling, prompt: spec.prompt, mode, modelId: spec.model_id ?? null, principal }) };
    }
  }
}

/** Who asks: the owner's transport and label (a detached job: the CLI and a fresh label). */
export type Submitter = Asker;

/** The gate, then the submission: `project` is where the job runs, `confinedTo` where its owner may act. */
export function admitJob(gate: GateEnv, jobs: Jobs, who: Submitter, project: string, confinedTo: string, spec: JobSpec): Promise<Submitted> {
  return enforce(gate, submitRequest(who, trustOf(gate.db(), confinedTo), spec.ceiling, project, spec.kind), (t) => submitJob(jobs, who.owner, project, { ...spec, ceiling: t.ceiling }));
}
