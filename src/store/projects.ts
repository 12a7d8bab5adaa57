/*
 * Trust records, keyed by a project's canonical real path. An unknown project is
 * untrusted at read_only, without network permission. Changing trust is an
 * executor: only the gate reaches it. Network permission (may a task reach a
 * model or server that is not loopback) is part of trust: untrust withdraws it.
 */
import type { Level } from '../ticket.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { type Db, sql } from './db.js';

export interface ProjectRecord {
  readonly path: string;
  readonly trusted: boolean;
  readonly level: Level;
  readonly trusted_at: string | null;
  readonly network: boolean;
}

export function getProject(db: Db, path: string): ProjectRecord {
  const row = sql(db, 'SELECT path, trusted, level, trusted_at, network FROM projects WHERE path = ?').get(path) as
    | { path: string; trusted: number; level: Level; trusted_at: string | null; network: number }
    | undefined;
  if (!row) return { path, trusted: false, level: 'read_only', trusted_at: null, network: false };
  return { path: row.path, trusted: row.trusted === 1, level: row.level, trusted_at: row.trusted_at, network: row.network === 1 };
}

/** `network` undefined keeps the project's current network permission (none for a new record). */
export function setTrust(ticket: GateTicket, db: Db, path: string, level: Level, network?: boolean): ProjectRecord {
  assertTicket(ticket, 'cli:trust');
  const now = new Date().toISOString();
  const net = network === undefined ? null : network ? 1 : 0;
  db.prepare(
    `INSERT INTO projects (path, trusted, level, trusted_at, updated_at, network) VALUES (?, 1, ?, ?, ?, COALESCE(?, 0))
     ON CONFLICT(path) DO UPDATE SET trusted = 1, level = excluded.level, trusted_at = excluded.trusted_at, updated_at = excluded.updated_at,
       network = COALESCE(?, projects.network)`,
  ).run(path, level, now, now, net, net);
  return getProject(db, path);
}

export function removeTrust(ticket: GateTicket, db: Db, path: string): ProjectRecord {
  assertTicket(ticket, 'cli:untrust');
  db.prepare(
    `INSERT INTO projects (path, trusted, level, trusted_at, updated_at, network) VALUES (?, 0, 'read_only', NULL, ?, 0)
     ON CONFLICT(path) DO UPDATE SET trusted = 0, level = 'read_only', trusted_at = NULL, updated_at = excluded.updated_at, network = 0`,
  ).run(path, new Date().toISOString());
  return getProject(db, path);
}
