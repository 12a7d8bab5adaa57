/*
 * What approvals approve and approvals deny share: one exact approval of this project, through the gate.
 *
 *   open (dead owners' jobs settled first) ─► the approval, in this project ─► gate cli:approvals.*
 *   ─► decision recorded (a test job moves to queued or cancelled with it) ─► the shared engine told
 *
 * The record is the decision. Telling the engine only makes it act now: if its sockets are all
 * taken (SC_ENGINE_BUSY) the engine re-reads its waiting decisions as soon as one frees, so the
 * command reports the decision as made and says that it takes effect then; it never reports a
 * failure for a decision it kept.
 */
import { decideApproval, getApproval } from '../../engine/approvals.js';
import { undeliverable } from '../../engine/engine.js';
import { getJob } from '../../engine/job-events.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Ctx } from '../context.js';
import { describeAction } from '../output.js';
import { findShared } from '../engine.js';
import type { Output } from '../spec.js';

export async function decide(ctx: Ctx, id: string, decision: 'approved' | 'denied'): Promise<Output> {
  const project = ctx.requireWorkspace(`approvals ${decision === 'approved' ? 'approve' : 'deny'}`);
  const db = ctx.db();
  const a = getApproval(db, id);
  if (!a || getJob(db, a.job_id)?.project !== project) throw new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(id)} in ${project}`);
  const verb = decision === 'approved' ? 'approve' : 'deny';
  const done = await enforce(ctx.gate(), ctx.request(`cli:approvals.${verb}`, { resource: { kind: 'approval', id, project }, args: { approval_id: id } }), (t) => decideApproval(t, db, id, decision, ctx.owner));
  // Said exactly as the approvals list says it, for every kind: a command, a write, an external server's call.
  const what = describeAction(done.kind, done.action as Record<string, unknown>);
  // The shared engine hears of it now; a temporary engine in a server process finds it by polling.
  let engine: Record<string, unknown> = { mode: 'temporary' };
  let note = '';
  try {
    const shared = await findShared(ctx);
    if (shared) {
      engine = { mode: 'shared', pid: shared.info.pid, delivered: true };
      await shared.decision(id);
    }
  } catch (err) {
    if (!undeliverable(err)) throw err;
    engine = { ...engine, mode: 'shared', delivered: false, reason: (err as ScError).code };
    note = `\nthe engine could not be told now (${(err as ScError).code}); it acts on the decision as soon as one of its sockets frees`;
  }
  const job = getJob(db, done.job_id);
  return { data: { approval: done, job, engine }, text: `${decision} ${id}: ${what}${job ? ` (job ${job.id} ${job.state})` : ''}${note}` };
}
