/*
 * Trust records, keyed by a project's canonical real path. An unknown project is
 * untrusted at read_only. Changing trust is an executor: only the gate reaches it.
 */
import type { Level } from '../ticket.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { type Db, sql } from './db.js';

export interface ProjectRecord {
  readonly path: string;
  readonly trusted: boolean;
  readonly level: Level;
  readonly trusted_at: string | null;
}

export function getProject(db: Db, path: string): ProjectRecord {
  const row = sql(db, 'SELECT path, trusted, level, trusted_at FROM projects WHERE path = ?').get(path) as
    | { path: string; trusted: number; level: Level; trusted_at: string | null }
    | undefined;
  if (!row) return { path, trusted: false, level: 'read_only', trusted_at: null };
  return { path: row.path, trusted: row.trusted === 1, level: row.level, trusted_at: row.trusted_at };
}

export function setTrust(ticket: GateTicket, db: Db, path: string, level: Level): ProjectRecord {
  assertTicket(ticket, 'cli:trust');
  const now = new Date().toISOString();
  db.prepare(
    `INSERT INTO projects (path, trusted, level, trusted_at, updated_at) VALUES (?, 1, ?, ?, ?)
     ON CONFLICT(path) DO UPDATE SET trusted = 1, level = excluded.level, trusted_at = excluded.trusted_at, updated_at = excluded.updated_at`,
  ).run(path, level, now, now);
  return getProject(db, path);
}

export function removeTrust(ticket: GateTicket, db: Db, path: string): ProjectRecord {
  assertTicket(ticket, 'cli:untrust');
  db.prepare(
    `INSERT INTO projects (path, trusted, level, trusted_at, updated_at) VALUES (?, 0, 'read_only', NULL, ?)
     ON CONFLICT(path) DO UPDATE SET trusted = 0, level = 'read_only', trusted_at = NULL, updated_at = excluded.updated_at`,
  ).run(path, new Date().toISOString());
  return getProject(db, path);
}
