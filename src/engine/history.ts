/*
 * What the engine recorded about file changes: a checkpoint, a path's history,
 * a task's reviewable diff with its verification results, and rollback.
 *
 * Rollback is all-or-nothing: every file the task changed must still hold what
 * the task left there (else SC_ROLLBACK_CONFLICT names the files and nothing is
 * touched); files are then restored one by one, and if one fails the ones
 * already restored are put back. The rollback is itself recorded as changes.
 * A change seen by a change watch whose prior content was past the snapshot
 * limits has a checkpoint that is not kept (kept = 0): it is reviewed and named,
 * never "restored" to an empty file; the rollback lists it as not restored.
 *
 * Links are never followed out of the project, nor to read: a path that is now a link,
 * or lies below a folder that is now one (a command swapped it in), is reviewed as
 * "now a link, not followed" with the rest of the task's files, and a rollback counts
 * it as changed since the task (SC_ROLLBACK_CONFLICT names it, nothing is touched).
 */
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { unifiedDiff } from './diff.js';
import { type FileState, projectWrite, readState } from './files.js';
import { addEvent, getJob } from './job-events.js';

interface CheckpointRow {
  id: string;
  job_id: string;
  project: string;
  path: string;
  existed: number;
  mode: number | null;
  content: Buffer | null;
  sha256: string | null;
  created_at: string;
  kept: number;
}

export function taskInProject(db: Db, project: string, taskId: string): void {
  const job = getJob(db, taskId);
  if (!job || job.project !== project) throw new ScError('SC_TASK_NOT_FOUND', `no task ${JSON.stringify(taskId)} in this project`);
}

export function inspectCheckpoint(db: Db, project: string, id: string, previewBytes: number): Record<string, unknown> {
  const c = sql(db, 'SELECT * FROM checkpoints WHERE id = ? AND project = ?').get(id, project) as CheckpointRow | undefined;
  if (!c) throw new ScError('SC_FILE_NOT_FOUND', `no checkpoint ${JSON.stringify(id)} in this project`);
  const text = c.content ? c.content.subarray(0, previewBytes).toString('utf8') : null;
  const binary = c.content ? c.content.subarray(0, previewBytes).includes(0) : false;
  return {
    id: c.id, task_id: c.job_id, path: c.path, existed: c.existed === 1, mode: c.mode === null ? null : c.mode.toString(8), sha256: c.sha256,
    bytes: c.content?.length ?? 0, created_at: c.created_at, binary, preview: binary ? null : text, preview_truncated: (c.content?.length ?? 0) > previewBytes,
  };
}

export function checkpointsOf(db: Db, project: string, taskId: string): Array<{ id: string; path: string; existed: boolean }> {
  return (sql(db, 'SELECT id, path, existed FROM checkpoints WHERE job_id = ? AND project = ? ORDER BY path').all(taskId, project) as Array<{ id: string; path: string; existed: number }>).map((r) => ({ ...r, existed: r.existed === 1 }));
}

export function pathHistory(db: Db, project: string, path: string, limit: number): unknown[] {
  return (sql(db, "SELECT c.job_id AS task_id, c.at, c.kind, c.why, c.before_sha, c.after_sha, j.title AS task_title FROM changes c JOIN jobs j ON j.id = c.job_id WHERE c.project = ? AND c.path = ? AND c.state = 'applied' ORDER BY c.seq DESC LIMIT ?").all(project, path, limit) as unknown[]);
}

/** The last content each path of the task was left with, and its checkpoint. */
function taskFiles(db: Db, project: string, taskId: string): Array<{ path: string; after: string | null; cp: CheckpointRow }> {
  const rows = sql(db, "SELECT path, after_sha FROM changes WHERE job_id = ? AND project = ? AND state = 'applied' AND kind IN ('write', 'delete') ORDER BY seq").all(taskId, project) as Array<{ path: string; after_sha: string | null }>;
  const last = new Map<string, string | null>();
  for (const r of rows) last.set(r.path, r.after_sha);
  return [...last].map(([path, after]) => ({ path, after, cp: sql(db, 'SELECT * FROM checkpoints WHERE job_id = ? AND path = ?').get(taskId, path) as CheckpointRow }));
}

export function reviewTask(db: Db, project: string, taskId: string, maxBytes: number, fileCap: number): Record<string, unknown> {
  taskInProject(db, project, taskId);
  const files = taskFiles(db, project, taskId).map(({ path, cp }) => {
    const now = stateOrLarge(project, path, fileCap);
    if ('link' in now) return { path, status: cp.existed ? 'modified' : 'added', diff: `--- ${cp.existed ? `a/${path}` : '/dev/null'}\n+++ b/${path}\n@@ ${now.link} @@\n` };
    const status = !cp.existed ? 'added' : now.exists ? 'modified' : 'deleted';
    const why = cp.kept === 0 ? 'its content before the task was past the snapshot limits and was not kept: no diff, and rollback cannot restore it' : now.exists && now.content === null ? `it is larger than ${fileCap} bytes: no diff` : null;
    if (why) return { path, status, diff: `--- ${cp.existed ? `a/${path}` : '/dev/null'}\n+++ ${now.exists ? `b/${path}` : '/dev/null'}\n@@ ${why} @@\n`, ...(cp.kept === 0 ? { restorable: false } : {}) };
    const before = cp.content?.toString('utf8') ?? '';
    const after = now.content?.toString('utf8') ?? '';
    return { path, status, diff: unifiedDiff(before, after, cp.existed ? `a/${path}` : '/dev/null', now.exists ? `b/${path}` : '/dev/null') };
  });
  let budget = maxBytes;
  for (const f of files) {
    if (f.diff.length > budget) f.diff = `${f.diff.slice(0, Math.max(0, budget))}\n… diff truncated\n`;
    budget -= f.diff.length;
  }
  const verification = sql(db, "SELECT id AS job_id, argv, state, exit_code, duration_ms, updated_at FROM jobs WHERE task_id = ? AND project = ? AND kind = 'test' ORDER BY created_at").all(taskId, project) as Array<{ argv: string }>;
  const rolledBack = sql(db, "SELECT count(*) AS n FROM changes WHERE job_id = ? AND kind = 'rollback' AND state = 'applied'").get(taskId) as { n: number };
  return { task_id: taskId, files, verification: verification.map((v) => ({ ...v, argv: JSON.parse(v.argv) as string[] })), rolled_back: rolledBack.n > 0 };
}

/** A file's state; for one too large to read whole, that it exists (content and sha unknown); for a link in the way, what it is (never followed). */
function stateOrLarge(project: string, path: string, cap: number): FileState | { link: string } {
  try {
    return readState(project, path, cap);
  } catch (err) {
    if (err instanceof ScError && err.code === 'SC_FILE_TOO_LARGE') return { exists: true, content: null, mode: null, sha: null };
    const link = linkInTheWay(err);
    if (link) return { link };
    throw err;
  }
}

/** Why a path cannot be read because a link is in the way (it is one, or a folder above it is), or null. */
function linkInTheWay(err: unknown): string | null {
  if (!(err instanceof ScError)) return null;
  if (err.code === 'SC_PATH_OUTSIDE') return 'a folder above it is now a link that leaves the project: not followed';
  if (err.code === 'SC_FILE_REFUSED' && /symbolic link/.test(err.message)) return 'it is now a symbolic link: not followed';
  if (err.code === 'SC_FILE_REFUSED') return 'it is no longer a regular file';
  return null;
}

/** The file's state now, or null where a link (or something not a file) is in the way: changed since the task, never followed. */
function stateOrNull(project: string, path: string, cap: number): FileState | null {
  try {
    return readState(project, path, cap);
  } catch (err) {
    if (linkInTheWay(err)) return null;
    throw err;
  }
}

export interface RolledBack {
  readonly task_id: string;
  readonly restored: string[];
  /** Changes whose prior content was not kept (past the snapshot limits): left as they are. */
  readonly not_restored?: Array<{ path: string; reason: string }>;
}

export function rollbackTask(ticket: GateTicket, db: Db, project: string, taskId: string, fileCap: number): RolledBack {
  assertTicket(ticket, 'tool:shadow_rollback');
  return restoreTask(db, project, taskId, fileCap);
}

/** The same rollback asked for at the command line (`shadowcode rollback`), where the person is the authority. */
export function rollbackTaskFromCli(ticket: GateTicket, db: Db, project: string, taskId: string, fileCap: number): RolledBack {
  assertTicket(ticket, 'cli:rollback');
  return restoreTask(db, project, taskId, fileCap);
}

/** Reached only from the two gated executors above. */
function restoreTask(db: Db, project: string, taskId: string, fileCap: number): RolledBack {
  taskInProject(db, project, taskId);
  const all = taskFiles(db, project, taskId);
  if (all.length === 0) throw new ScError('SC_FILE_NOT_FOUND', `task ${taskId} changed no files`);
  const files = all.filter((f) => f.cp.kept !== 0);
  const notRestored = all.filter((f) => f.cp.kept === 0).map((f) => ({ path: f.path, reason: 'its content before the task was past the snapshot limits and was not kept' }));
  const read = files.map((f) => ({ ...f, now: stateOrNull(project, f.path, fileCap) }));
  // A link in the way is a change since the task: named as a conflict, never written through.
  const blocked = read.filter((s) => s.now === null).map((s) => s.path);
  if (blocked.length) throw new ScError('SC_ROLLBACK_CONFLICT', `changed since task ${taskId} (now a link, or below one, which is not followed): ${blocked.join(', ')}; nothing was rolled back`, { files: blocked });
  const states = read as Array<(typeof read)[number] & { now: FileState }>;
  const conflicts = states.filter((s) => s.now.sha !== s.after).map((s) => s.path);
  // Undone once already: the files no longer hold what the task left, because the rollback put them back.
  const earlier = sql(db, "SELECT max(at) AS at FROM changes WHERE job_id = ? AND project = ? AND kind = 'rollback' AND state = 'applied'").get(taskId, project) as { at: string | null };
  if (conflicts.length && earlier.at) {
    const since = states.filter((s) => s.now.sha !== s.cp.sha256).map((s) => s.path);
    if (since.length === 0) throw new ScError('SC_ALREADY_ROLLED_BACK', `task ${taskId} was already rolled back at ${earlier.at}: its files are as they were before it; nothing was changed`, { task_id: taskId, rolled_back_at: earlier.at });
    throw new ScError('SC_ROLLBACK_CONFLICT', `task ${taskId} was rolled back at ${earlier.at}, and since then ${since.join(', ')} changed; nothing was rolled back`, { files: since, rolled_back_at: earlier.at });
  }
  if (conflicts.length) throw new ScError('SC_ROLLBACK_CONFLICT', `changed since task ${taskId}: ${conflicts.join(', ')}; nothing was rolled back`, { files: conflicts });
  const done: typeof states = [];
  try {
    for (const s of states) {
      // Through the directory held open, like every write: a link swapped in meanwhile cannot send it outside.
      if (s.cp.existed) projectWrite(project, s.path, s.cp.content ?? Buffer.alloc(0), s.cp.mode ?? 0o644);
      else if (s.now.exists) projectWrite(project, s.path, null, 0);
      done.push(s);
    }
  } catch (err) {
    for (const s of done.reverse()) {
      if (s.now.exists) projectWrite(project, s.path, s.now.content as Buffer, s.now.mode ?? 0o644);
    }
    throw new ScError('SC_INTERNAL', `rollback of ${taskId} failed and was undone: ${(err as Error).message}`);
  }
  db.transaction(() => {
    const at = new Date().toISOString();
    for (const s of states) {
      sql(db, "INSERT INTO changes (job_id, project, path, kind, state, why, before_sha, after_sha, at) VALUES (?, ?, ?, 'rollback', 'applied', ?, ?, ?, ?)").run(taskId, project, s.path, `rollback of ${taskId}`, s.now.sha, s.cp.sha256, at);
    }
    addEvent(db, taskId, 'rolled_back', { files: states.map((s) => s.path), ...(notRestored.length ? { not_restored: notRestored } : {}) });
  }).immediate();
  return { task_id: taskId, restored: states.map((s) => s.path), ...(notRestored.length ? { not_restored: notRestored } : {}) };
}
