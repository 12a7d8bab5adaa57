/*
 * The one file-change API every writer uses (the agent's write and edit tools,
 * rollback, anything later). Confined to the project by real path; before a job
 * first changes a file, its prior state (content and mode, or absence) is kept
 * as a checkpoint.
 *
 *   the directory opened by descriptor, inside the project (project-dir.ts)
 *   checkpoint row + change row (pending)   ─ one transaction, committed first
 *   temp file ─► fsync ─► directory re-checked ─► rename within it ─► re-checked
 *   change row ─► applied      (any failure: temp file removed, change aborted,
 *                               a checkpoint made only for it removed)
 *
 * A crash between the steps leaves a pending change; reconcileChanges() settles
 * it from the file itself (applied if the file has the new content, else
 * aborted), so the store never claims a change that did not happen. `guard`
 * sees the real path of the directory actually written (protected paths), so a
 * link swapped in after the caller's own check is still caught.
 */
import { basename, dirname, relative, sep } from 'node:path';
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { sha256 } from '../util/canonical-json.js';
import { newId } from '../util/ids.js';
import { confinedPath } from '../util/confine.js';
import { tryReadProjectFile } from '../util/safe-read.js';
import { ProjectDir } from './project-dir.js';

export interface FileState {
  readonly exists: boolean;
  readonly content: Buffer | null;
  readonly mode: number | null;
  readonly sha: string | null;
}

/** A project file's current state, read through the bounded primitive: a link, FIFO or device is refused, never followed. */
export function readState(project: string, rel: string, cap: number): FileState {
  const r = tryReadProjectFile(project, rel, { cap, kind: 'file', links: 'refuse' });
  if (!r) return { exists: false, content: null, mode: null, sha: null };
  return { exists: true, content: r.bytes, mode: r.mode & 0o7777, sha: sha256(r.bytes) };
}

/** Writes (content) or removes (null) a project file through its directory held open: never outside the project, no temp file left. */
export function projectWrite(project: string, rel: string, content: Buffer | null, mode: number): void {
  const dir = ProjectDir.open(project, dirname(rel));
  try {
    if (content) dir.write(basename(rel), content, mode);
    else dir.unlink(basename(rel));
  } finally {
    dir.close();
  }
}

function target(project: string, path: string): { abs: string; rel: string } {
  const abs = confinedPath(project, path, { mustExist: false });
  // The directory is opened and checked by ProjectDir: it must exist inside the project, never through a link out.
  return { abs, rel: relative(project, abs) };
}

/**
 * Creates the missing directories above a project path, one level at a time,
 * each checked to be a real directory inside the project first: a path never
 * reaches outside through a link, and nothing is created above the project.
 * Returns the directories made, relative to the project.
 */
export function createParents(ticket: GateTicket, project: string, path: string): string[] {
  assertTicket(ticket, 'file:write');
  const abs = confinedPath(project, path, { mustExist: false });
  const parts = relative(project, dirname(abs)).split(sep).filter((p) => p !== '');
  const made: string[] = [];
  let dir = ProjectDir.open(project, '');
  try {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      // Made inside the directory held open, never through a path a link could redirect.
      if (dir.mkdir(part)) made.push(parts.slice(0, i + 1).join('/'));
      const next = ProjectDir.open(project, parts.slice(0, i + 1).join('/'));
      dir.close();
      dir = next;
    }
  } catch (err) {
    if (err instanceof ScError && err.code === 'SC_FILE_NOT_FOUND' && /is not a directory/.test(err.message)) throw new ScError('SC_FILE_REFUSED', err.message.replace('is not a directory', 'exists and is not a directory'));
    throw err;
  } finally {
    dir.close();
  }
  return made;
}

export interface WriteResult {
  readonly path: string;
  readonly before_sha: string | null;
  readonly after_sha: string | null;
  readonly checkpoint_id: string;
}

export interface ChangeOptions {
  /** Sees the real path of the directory written, before and after the write: throws to refuse (protected paths). */
  readonly guard?: (realDir: string, name: string) => void;
  /** The sha the file must still have (null: must still be absent), as shown in an approval. */
  readonly expectBeforeSha?: string | null;
}

/** Writes (or with content null, deletes) one project file on behalf of a job. */
export function changeFile(ticket: GateTicket, db: Db, project: string, jobId: string, path: string, content: Buffer | null, why: string, maxBytes: number, opts: ChangeOptions = {}): WriteResult {
  assertTicket(ticket, 'file:write');
  if (content && content.length > maxBytes) throw new ScError('SC_LIMIT_REACHED', `a file may be at most ${maxBytes} bytes`);
  const { rel } = target(project, path);
  const name = basename(rel);
  const dir = ProjectDir.open(project, dirname(rel));
  try {
    const check = opts.guard ? (real: string) => opts.guard?.(real, name) : undefined;
    dir.verify(check);
    let before: FileState;
    try {
      before = readState(project, rel, maxBytes);
    } catch (err) {
      if (err instanceof ScError && err.code === 'SC_FILE_TOO_LARGE') throw new ScError('SC_LIMIT_REACHED', `${rel} is larger than ${maxBytes} bytes and cannot be checkpointed`);
      throw err;
    }
    if (opts.expectBeforeSha !== undefined && opts.expectBeforeSha !== before.sha) throw new ScError('SC_FILE_CHANGED', `${rel} changed after its change was shown for approval; nothing was written`);
    const after = content ? sha256(content) : null;
    let checkpointId = '';
    let made = false;
    let seq = 0;
    db.transaction(() => {
      const existing = sql(db, 'SELECT id FROM checkpoints WHERE job_id = ? AND path = ?').get(jobId, rel) as { id: string } | undefined;
      checkpointId = existing?.id ?? newId('ckpt');
      made = !existing;
      if (!existing) {
        sql(db, 'INSERT INTO checkpoints (id, job_id, project, path, existed, mode, content, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
          checkpointId, jobId, project, rel, before.exists ? 1 : 0, before.mode, before.content, before.sha, new Date().toISOString(),
        );
      }
      seq = Number(
        sql(db, "INSERT INTO changes (job_id, project, path, kind, state, why, before_sha, after_sha, at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)").run(
          jobId, project, rel, content ? 'write' : 'delete', why, before.sha, after, new Date().toISOString(),
        ).lastInsertRowid,
      );
    }).immediate();
    try {
      if (content) dir.write(name, content, before.mode ?? 0o644, check);
      else if (before.exists) dir.unlink(name, check);
    } catch (err) {
      // Nothing was written: the change is settled as aborted, and a checkpoint made only for it goes too.
      db.transaction(() => {
        sql(db, "UPDATE changes SET state = 'aborted' WHERE seq = ?").run(seq);
        if (made) sql(db, 'DELETE FROM checkpoints WHERE id = ?').run(checkpointId);
      }).immediate();
      throw err;
    }
    sql(db, "UPDATE changes SET state = 'applied' WHERE seq = ?").run(seq);
    return { path: rel, before_sha: before.sha, after_sha: after, checkpoint_id: checkpointId };
  } finally {
    dir.close();
  }
}

/** Settles changes a crash left pending: the file says whether the write happened. */
export function reconcileChanges(db: Db, cap: number): number {
  const rows = sql(db, "SELECT seq, project, path, after_sha FROM changes WHERE state = 'pending'").all() as Array<{ seq: number; project: string; path: string; after_sha: string | null }>;
  for (const r of rows) {
    let sha: string | null = null;
    try {
      sha = readState(r.project, r.path, cap).sha;
    } catch {
      sha = '';
    }
    sql(db, 'UPDATE changes SET state = ? WHERE seq = ?').run(sha === r.after_sha ? 'applied' : 'aborted', r.seq);
  }
  return rows.length;
}
