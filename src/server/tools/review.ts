/*
 * shadow_review: a task's changes as a unified diff, with its verification results. A task
 * whose owner died is settled first, so what its processes changed until then is in it.
 */
import { reviewTask } from '../../engine/history.js';
import { getJob } from '../../engine/job-events.js';
import { reapOrphans } from '../../engine/owners.js';
import { READ_ONLY, type ToolDef } from './types.js';

export const shadowReview: ToolDef<{ task_id: string }> = {
  name: 'shadow_review',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_review',
  resource: (conn, a) => ({ kind: 'task', id: a.task_id, project: getJob(conn.engine.db(), a.task_id)?.project ?? conn.project }),
  run: (conn, a) => {
    reapOrphans(conn.engine.db(), conn.engine.policy);
    return reviewTask(conn.engine.db(), conn.project, a.task_id, conn.engine.policy.limits.jobs.review_bytes, conn.engine.policy.limits.jobs.checkpoint_bytes);
  },
};
