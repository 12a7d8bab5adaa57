/*
 * Approvals as operations: the project's pending ones, and one decision on one of them.
 *
 *   listApprovals(ops)  ─► the pending approvals of every owner's jobs in the project
 *   decide(ops, {approvalId, decision})
 *     ─► open (dead owners' jobs settled first) ─► the approval, in this project
 *     ─► gate cli:approvals.approve|deny ─► decision recorded (a test job moves to queued or
 *        cancelled with it) ─► the shared engine told ─► {approval, job, engine}
 *
 * The record is the decision. Telling the engine only makes it act now: if its sockets are all
 * taken (SC_ENGINE_BUSY) the engine re-reads its waiting decisions as soon as one frees, so the
 * result reports the decision as made and says that it takes effect then; it never reports a
 * failure for a decision it kept.
 */
import type { ApprovalRow, JobRow } from '../engine/job-types.js';
import { decideApproval, getApproval, pendingApprovals } from '../engine/approvals.js';
import { undeliverable } from '../engine/engine.js';
import { getJob } from '../engine/job-events.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { type OpsContext, projectOf } from './context.js';
import { findShared } from './engine.js';

/** A pending approval with the owner of its job, as every surface lists it. */
export type PendingApproval = ApprovalRow & { owner: string };

export interface DecideInput {
  readonly approvalId: string;
  readonly decision: 'approved' | 'denied';
}

/** Whether the engine running the job heard of the decision now (a temporary engine in a server process finds it by polling). */
export type EngineNotice =
  | { readonly mode: 'temporary' }
  | { readonly mode: 'shared'; readonly pid: number; readonly delivered: true }
  | { readonly mode: 'shared'; readonly pid?: number; readonly delivered: false; readonly reason: string };

export interface DecideResult {
  readonly approval: ApprovalRow;
  readonly job: JobRow | undefined;
  readonly engine: EngineNotice;
}

export function listApprovals(ops: Pick<OpsContext, 'db' | 'project'>): PendingApproval[] {
  return pendingApprovals(ops.db(), { project: projectOf(ops, 'approvals') });
}

export async function decide(ops: OpsContext, input: DecideInput): Promise<DecideResult> {
  const { approvalId: id, decision } = input;
  const verb = decision === 'approved' ? 'approve' : 'deny';
  const project = projectOf(ops, `approvals ${verb}`);
  const db = ops.db();
  const a = getApproval(db, id);
  if (!a || getJob(db, a.job_id)?.project !== project) throw new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(id)} in ${project}`);
  const done = await enforce(ops.gate, ops.request(`cli:approvals.${verb}`, { resource: { kind: 'approval', id, project }, args: { approval_id: id } }), (t) => decideApproval(t, db, id, decision, ops.owner));
  // The shared engine hears of it now; a temporary engine in a server process finds it by polling.
  let engine: EngineNotice = { mode: 'temporary' };
  try {
    const shared = await findShared(ops);
    if (shared) {
      engine = { mode: 'shared', pid: shared.info.pid, delivered: true };
      await shared.decision(id);
    }
  } catch (err) {
    if (!undeliverable(err)) throw err;
    engine = { ...engine, mode: 'shared', delivered: false, reason: (err as ScError).code };
  }
  return { approval: done, job: getJob(db, done.job_id), engine };
}
