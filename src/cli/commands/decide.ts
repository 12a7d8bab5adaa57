/*
 * What approvals approve and approvals deny share: the decision (ops/approvals.ts), in one line.
 *
 *   ID ─► ops decide (the approval in this project ─► gate cli:approvals.* ─► the shared engine told)
 *   ─► "approved ID: what it was (job J state)", and when the engine could not be told now, that it acts on it later
 */
import { decide as decideApproval } from '../../ops/approvals.js';
import type { Ctx } from '../context.js';
import { describeAction } from '../output.js';
import type { Output } from '../spec.js';

export async function decide(ctx: Ctx, id: string, decision: 'approved' | 'denied'): Promise<Output> {
  ctx.requireWorkspace(`approvals ${decision === 'approved' ? 'approve' : 'deny'}`);
  const r = await decideApproval(ctx.ops, { approvalId: id, decision });
  // Said exactly as the approvals list says it, for every kind: a command, a write, an external server's call.
  const what = describeAction(r.approval.kind, r.approval.action as Record<string, unknown>);
  const note = r.engine.mode === 'shared' && !r.engine.delivered ? `\nthe engine could not be told now (${r.engine.reason}); it acts on the decision as soon as one of its sockets frees` : '';
  return { data: r, text: `${decision} ${id}: ${what}${r.job ? ` (job ${r.job.id} ${r.job.state})` : ''}${note}` };
}
