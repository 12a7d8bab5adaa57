/* shadow_jobs: this owner's jobs, their events by page, their pending approvals, and cancelling one. */
import { pendingApprovals } from '../../engine/approvals.js';
import { getJob, jobAnswer, jobEvents, listJobs } from '../../engine/job-events.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  action: 'list' | 'events' | 'approvals' | 'cancel';
  job_id?: string;
  limit?: number;
  cursor?: string;
}

export const shadowJobs: ToolDef<Args> = {
  name: 'shadow_jobs',
  annotations: { ...READ_ONLY, readOnlyHint: false },
  action: (a) => `tool:shadow_jobs.${a.action}`,
  resource: (conn, a) => {
    if (!a.job_id) return undefined;
    const job = getJob(conn.engine.db(), a.job_id);
    // An unknown job has no owner, so own-jobs-only refuses it exactly as it refuses another owner's.
    return { kind: 'job', id: a.job_id, ...(job ? { owner: job.owner, project: job.project } : { project: conn.project }) };
  },
  async run(conn, a) {
    const db = conn.engine.db();
    const l = conn.engine.policy.limits;
    const limit = Math.min(a.limit ?? l.inspection.page_size_default, l.inspection.page_size_max);
    const page = a.cursor ? { cursor: a.cursor } : {};
    switch (a.action) {
      case 'list': {
        const p = listJobs(db, conn.project, conn.owner, { limit, ...page });
        return { jobs: p.items, next_cursor: p.next_cursor };
      }
      case 'events': {
        const p = jobEvents(db, a.job_id as string, { limit: Math.min(a.limit ?? l.jobs.event_page_size, l.inspection.page_size_max), ...page });
        const job = getJob(db, a.job_id as string);
        // An agent task's pending approvals and final answer come with every page, so a client need not page to the end.
        const extra = job?.kind === 'agent' ? { approvals: pendingApprovals(db, { project: conn.project, jobId: job.id }), answer: jobAnswer(db, job.id) } : {};
        return { job, events: p.items, next_cursor: p.next_cursor, ...extra };
      }
      case 'approvals':
        return { approvals: pendingApprovals(db, { project: conn.project, jobId: a.job_id as string }) };
      case 'cancel':
        return { job: await conn.engine.cancelJob(conn.ownerSpec, a.job_id as string) };
    }
  },
};
