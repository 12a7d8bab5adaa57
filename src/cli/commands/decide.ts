/* What approvals approve and approvals deny share: one exact approval of this project, through the gate. */
import { decideApproval, getApproval, getJob } from '../../engine/jobs.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Ctx } from '../context.js';
import { findShared } from '../engine.js';
import type { Output } from '../spec.js';

export async function decide(ctx: Ctx, id: string, decision: 'approved' | 'denied'): Promise<Output> {
  const project = ctx.requireWorkspace(`approvals ${decision === 'approved' ? 'approve' : 'deny'}`);
  const db = ctx.db();
  const a = getApproval(db, id);
  if (!a || getJob(db, a.job_id)?.project !== project) throw new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(id)} in ${project}`);
  const verb = decision === 'approved' ? 'approve' : 'deny';
  const done = await enforce(ctx.gate(), ctx.request(`cli:approvals.${verb}`, { resource: { kind: 'approval', id, project }, args: { approval_id: id } }), () => decideApproval(db, id, decision, ctx.owner));
  const what = done.action.argv ? JSON.stringify(done.action.argv) : (done.action.path ?? '');
  // The shared engine hears of it now; a temporary engine in a server process finds it by polling.
  const shared = await findShared(ctx);
  if (shared) await shared.decision(id);
  return { data: { approval: done, engine: shared ? { mode: 'shared', pid: shared.info.pid } : { mode: 'temporary' } }, text: `${decision} ${id}: ${done.kind} ${what}` };
}
