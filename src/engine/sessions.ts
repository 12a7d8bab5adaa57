/*
 * Conversations the engine has run for a project. The project filter is part
 * of the query, so the listing limit applies to this project's sessions only.
 */
import { type Db, sql } from '../store/db.js';
import { decodeCursor, encodeCursor, type Page } from '../util/cursor.js';

export interface Session {
  readonly id: string;
  readonly title: string;
  readonly job_id: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export function listSessions(db: Db, project: string, opts: { limit: number; cursor?: string }): Page<Session> {
  const after = opts.cursor ? decodeCursor(opts.cursor, 2) : undefined;
  const rows = sql(
      db,
      `SELECT id, title, job_id, created_at, updated_at FROM sessions
       WHERE project = ? AND (? IS NULL OR (updated_at, id) < (?, ?))
       ORDER BY updated_at DESC, id DESC LIMIT ?`,
    )
    .all(project, after ? 1 : null, after?.[0] ?? null, after?.[1] ?? null, opts.limit + 1) as Session[];
  const more = rows.length > opts.limit;
  const items = rows.slice(0, opts.limit);
  const last = items[items.length - 1];
  return { items, next_cursor: more && last ? encodeCursor([last.updated_at, last.id]) : null };
}
