/*
 * shadow_test: submit an owned test job; it runs only after its exact command is approved.
 * With task_id its approval carries what that task changed so far and which of those files
 * the command runs (with their diffs), like the task's own command approvals; what the run
 * changes is recorded on the task. Without one, on the test job itself (review JOB).
 */
import { singleTestCommand } from '../../engine/detect-tests.js';
import { taskInProject } from '../../engine/history.js';
import { getJob } from '../../engine/job-events.js';
import { ScError } from '../../errors.js';
import { type ToolDef, WRITES } from './types.js';

interface Args {
  command?: string[];
  task_id?: string;
}

export const shadowTest: ToolDef<Args> = {
  name: 'shadow_test',
  annotations: { ...WRITES, openWorldHint: true },
  action: () => 'tool:shadow_test',
  resource: (conn, a) => (a.task_id ? { kind: 'task', id: a.task_id, project: getJob(conn.engine.db(), a.task_id)?.project ?? conn.project } : undefined),
  async run(conn, a, ticket) {
    const db = conn.engine.db();
    if (a.task_id) taskInProject(db, conn.project, a.task_id);
    let argv = a.command;
    if (!argv) argv = [...singleTestCommand(conn.project, conn.engine.policy.limits.files).argv];
    const { job, approval } = await conn.engine.submitJob(conn.ownerSpec, { kind: 'test', argv, ceiling: ticket.ceiling, task_id: a.task_id ?? null });
    if (!approval) throw new ScError('SC_INTERNAL', 'a test job was submitted without its approval');
    return {
      job_id: job.id,
      state: job.state,
      approval: {
        id: approval.id, kind: approval.kind, argv: approval.action.argv, cwd: approval.action.cwd,
        ...(approval.action.changed_files ? { changed_files: approval.action.changed_files, ...(approval.action.changed_files_more ? { changed_files_more: approval.action.changed_files_more } : {}), runs_changed: approval.action.runs_changed, notice: approval.action.notice } : {}),
      },
      next: `Show the user the exact command${approval.action.notice ? ' and the warning with its diffs' : ''}, then approve with shadow_approve (needs --allow-approvals), or the user runs: shadowcode --project ${conn.project} approvals approve ${approval.id}`,
    };
  },
};
