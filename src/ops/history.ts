/*
 * A project's recorded history as operations: what a task changed, what changed a file,
 * and undoing a task. The person (at the terminal, on the page, a host) is the authority.
 *
 *   review(ops, taskId)        ─► gate cli:review (resource: the task) ─► reviewTask
 *                                 ─► per file: status, path, diff; its verification runs
 *   why(ops, {path, limit?})   ─► path confined to the project ─► gate cli:why ─► pathHistory, newest first
 *   rollbackPreview(ops, id)   ─► the files a rollback would restore (read as review reads them)
 *   rollback(ops, taskId)      ─► gate cli:rollback (resource: the task) ─► rollbackTaskFromCli
 *                                 ─► all or nothing, refused when a file changed since
 *
 * The MCP tools shadow_review, shadow_why and shadow_rollback reach the same engine code through
 * their own gate actions (tool:*), as the connection that asks.
 */
import { relative } from 'node:path';
import { pathHistory, reviewTask, type RolledBack, rollbackTaskFromCli } from '../engine/history.js';
import { enforce } from '../policy/gate.js';
import { confinedPath } from '../util/confine.js';
import { type OpsContext, projectOf } from './context.js';
import { pageSize } from './jobs.js';

export type { RolledBack };

export interface TaskReview {
  readonly task_id: string;
  readonly files: Array<{ path: string; status: string; diff: string; restorable?: false }>;
  readonly verification: Array<{ job_id: string; argv: string[]; state: string; exit_code: number | null; duration_ms: number | null; updated_at: string }>;
  readonly rolled_back: boolean;
}

export interface Change {
  readonly task_id: string;
  readonly at: string;
  readonly kind: string;
  readonly why: string;
  readonly before_sha: string | null;
  readonly after_sha: string | null;
  readonly task_title: string;
}

export interface WhyInput {
  /** Relative to the project, or absolute inside it. */
  readonly path: string;
  /** How many changes; the default page otherwise (limits.inspection), never past its maximum. */
  readonly limit?: number;
}

export interface PathHistory {
  /** The path relative to the project. */
  readonly path: string;
  readonly changes: Change[];
}

export async function review(ops: OpsContext, taskId: string): Promise<TaskReview> {
  const project = projectOf(ops, 'review');
  const l = ops.policy.limits.jobs;
  const db = ops.db();
  return (await enforce(ops.gate, ops.request('cli:review', { resource: { kind: 'task', id: taskId, project } }), () => reviewTask(db, project, taskId, l.review_bytes, l.checkpoint_bytes))) as unknown as TaskReview;
}

export async function why(ops: OpsContext, input: WhyInput): Promise<PathHistory> {
  const project = projectOf(ops, 'why');
  const path = relative(project, confinedPath(project, input.path, { mustExist: false }));
  const limit = pageSize(ops, input.limit);
  const db = ops.db();
  const changes = (await enforce(ops.gate, ops.request('cli:why', { resource: { kind: 'file', id: path.slice(0, 512), project }, args: { path } }), () => pathHistory(db, project, path, limit))) as Change[];
  return { path, changes };
}

/** What a rollback of the task would put back, for the person to confirm first; not a decision. */
export function rollbackPreview(ops: OpsContext, taskId: string): TaskReview['files'] {
  const project = projectOf(ops, 'rollback');
  const l = ops.policy.limits.jobs;
  return (reviewTask(ops.db(), project, taskId, l.review_bytes, l.checkpoint_bytes) as unknown as TaskReview).files;
}

export async function rollback(ops: OpsContext, taskId: string): Promise<RolledBack> {
  const project = projectOf(ops, 'rollback');
  const l = ops.policy.limits.jobs;
  const db = ops.db();
  return enforce(ops.gate, ops.request('cli:rollback', { resource: { kind: 'task', id: taskId, project }, args: { task_id: taskId } }), (ticket) => rollbackTaskFromCli(ticket, db, project, taskId, l.checkpoint_bytes));
}
