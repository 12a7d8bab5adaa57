/* shadow_approve: one exact pending action of a job this owner holds. No bulk approval. */
import { decideApproval, getApproval } from '../../engine/approvals.js';
import { getJob } from '../../engine/job-events.js';
import { type ToolDef, WRITES } from './types.js';

interface Args {
  approval_id: string;
  decision: 'approve' | 'deny';
}

export const shadowApprove: ToolDef<Args> = {
  name: 'shadow_approve',
  annotations: { ...WRITES, destructiveHint: true },
  action: (a) => `tool:shadow_approve.${a.decision}`,
  resource: (conn, a) => {
    const db = conn.engine.db();
    const approval = getApproval(db, a.approval_id);
    const job = approval ? getJob(db, approval.job_id) : undefined;
    return { kind: 'approval', id: a.approval_id, ...(job ? { owner: job.owner, project: job.project } : { project: conn.project }) };
  },
  async run(conn, a, ticket) {
    const approval = decideApproval(ticket, conn.engine.db(), a.approval_id, a.decision === 'approve' ? 'approved' : 'denied', conn.owner);
    // Pushed to whichever engine holds the job, so it moves now rather than at the next poll.
    await conn.engine.notifyDecision(approval.id, conn.owner);
    return { approval, job: getJob(conn.engine.db(), approval.job_id) };
  },
};
