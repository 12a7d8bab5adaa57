/*
 * Project and task notes, kept in state.db (never in the project). A note is read
 * with its content hash; replacing it needs that hash, so two writers cannot
 * silently overwrite each other. A task scope names an exact task of this project.
 */
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { sha256 } from '../util/canonical-json.js';

export type Scope = 'project' | 'task';

export interface Note {
  readonly scope: Scope;
  readonly task_id: string | null;
  readonly content: string;
  readonly hash: string;
  readonly bytes: number;
  readonly updated_at: string | null;
}

export function taskExists(db: Db, project: string, taskId: string): boolean {
  return sql(db, 'SELECT 1 FROM jobs WHERE id = ? AND project = ?').get(taskId, project) !== undefined;
}

function checkScope(db: Db, project: string, scope: Scope, taskId: string | undefined): string {
  if (scope === 'project') return '';
  if (!taskId || !taskExists(db, project, taskId)) {
    throw new ScError('SC_TASK_NOT_FOUND', `no task ${JSON.stringify(taskId ?? '')} in this project; task notes need an exact existing task id`);
  }
  return taskId;
}

export function readNote(db: Db, project: string, scope: Scope, taskId?: string): Note {
  const key = checkScope(db, project, scope, taskId);
  const row = sql(db, 'SELECT content, updated_at FROM memory WHERE project = ? AND scope = ? AND task_id = ?').get(project, scope, key) as
    | { content: string; updated_at: string }
    | undefined;
  const content = row?.content ?? '';
  return { scope, task_id: key || null, content, hash: sha256(content), bytes: Buffer.byteLength(content), updated_at: row?.updated_at ?? null };
}

function write(db: Db, project: string, scope: Scope, key: string, content: string, maxBytes: number): void {
  if (Buffer.byteLength(content) > maxBytes) throw new ScError('SC_LIMIT_REACHED', `the note would be larger than ${maxBytes} bytes`);
  sql(db, 
    `INSERT INTO memory (project, scope, task_id, content, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(project, scope, task_id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`,
  ).run(project, scope, key, content, new Date().toISOString());
}

export function appendNote(ticket: GateTicket, db: Db, project: string, scope: Scope, taskId: string | undefined, text: string, maxBytes: number): Note {
  assertTicket(ticket, 'tool:shadow_memory.append');
  return db.transaction(() => {
    const cur = readNote(db, project, scope, taskId);
    const next = cur.content === '' ? text : cur.content.endsWith('\n') ? `${cur.content}${text}` : `${cur.content}\n${text}`;
    write(db, project, scope, cur.task_id ?? '', next, maxBytes);
    return readNote(db, project, scope, taskId);
  }).immediate();
}

export function replaceNote(ticket: GateTicket, db: Db, project: string, scope: Scope, taskId: string | undefined, content: string, expectedHash: string, maxBytes: number): Note {
  assertTicket(ticket, 'tool:shadow_memory.replace');
  return db.transaction(() => {
    const cur = readNote(db, project, scope, taskId);
    if (cur.hash !== expectedHash) {
      throw new ScError('SC_HASH_MISMATCH', 'the note changed since it was read; read it again and replace with the new hash', { current_hash: cur.hash });
    }
    write(db, project, scope, cur.task_id ?? '', content, maxBytes);
    return readNote(db, project, scope, taskId);
  }).immediate();
}

/** Saving the project map: appends a dated section to the project note. */
export function saveMapNote(ticket: GateTicket, db: Db, project: string, text: string, maxBytes: number): Note {
  assertTicket(ticket, 'tool:shadow_understand.save');
  return db.transaction(() => {
    const cur = readNote(db, project, 'project');
    const next = `${cur.content}${cur.content && !cur.content.endsWith('\n') ? '\n' : ''}${text}`;
    write(db, project, 'project', '', next, maxBytes);
    return readNote(db, project, 'project');
  }).immediate();
}
