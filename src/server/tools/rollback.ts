/* shadow_rollback: restore a task's files, all or nothing, after conflict checks (a dead owner's task settled first). */
import { rollbackTask } from '../../engine/history.js';
import { getJob } from '../../engine/job-events.js';
import { reapOrphans } from '../../engine/owners.js';
import { type ToolDef, WRITES } from './types.js';

export const shadowRollback: ToolDef<{ task_id: string; confirm: true }> = {
  name: 'shadow_rollback',
  annotations: { ...WRITES, destructiveHint: true },
  action: () => 'tool:shadow_rollback',
  resource: (conn, a) => ({ kind: 'task', id: a.task_id, project: getJob(conn.engine.db(), a.task_id)?.project ?? conn.project }),
  run: (conn, a, ticket) => {
    reapOrphans(conn.engine.db(), conn.engine.policy);
    return rollbackTask(ticket, conn.engine.db(), conn.project, a.task_id, conn.engine.policy.limits.jobs.checkpoint_bytes);
  },
};
