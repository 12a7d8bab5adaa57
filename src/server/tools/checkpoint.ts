/* shadow_checkpoint: one checkpoint, or the checkpoints of one task. */
import { checkpointsOf, inspectCheckpoint, taskInProject } from '../../engine/history.js';
import { getJob } from '../../engine/job-events.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  checkpoint_id?: string;
  task_id?: string;
}

export const shadowCheckpoint: ToolDef<Args> = {
  name: 'shadow_checkpoint',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_checkpoint',
  resource: (conn, a) => (a.task_id ? { kind: 'task', id: a.task_id, project: getJob(conn.engine.db(), a.task_id)?.project ?? conn.project } : undefined),
  run(conn, a) {
    const db = conn.engine.db();
    if (a.checkpoint_id) return inspectCheckpoint(db, conn.project, a.checkpoint_id, conn.engine.policy.limits.jobs.preview_bytes);
    taskInProject(db, conn.project, a.task_id as string);
    return { task_id: a.task_id, checkpoints: checkpointsOf(db, conn.project, a.task_id as string) };
  },
};
