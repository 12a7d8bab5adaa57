/*
 * Reading the audit log for people: a filtered page newest first, one decision's row, one row by
 * number, and the rows that followed a decision. Read-only: rows are appended only by
 * store/audit.ts, and decision rows only by the gate.
 *
 *   listAudit(filter)      ─► WHERE on the row and its JSON body ─► newest first, up to the limit
 *   findDecision(id)       ─► the row whose body carries that decision id
 *   auditRow(seq)          ─► one row
 *   rowsOfDecision(id)     ─► the other rows naming that decision (a spawn, an HTTP outcome)
 */
import type { AuditEntry } from './audit.js';
import type { Db } from './db.js';

interface Row {
  seq: number;
  at: string;
  kind: string;
  body: string;
  prev: string;
  hash: string;
}


/** One stored row as the chain verifies it: its place, time, kind, body (parsed) and hashes. */
export interface ChainRow extends AuditEntry {
  prev: string;
  hash: string;
}

/** Which rows `audit list` wants; every field narrows, none widens. */
export interface AuditFilter {
  /** Only decisions, allowed (true) or denied (false). */
  readonly allow?: boolean;
  /** An action, or a family ending in `*` (tool:*, cli:approvals.*). Decisions only. */
  readonly action?: string;
  /** A canonical project path. Decisions only. */
  readonly project?: string;
  /** The principal's owner label, or a prefix ending in `*` (stdio:*). Decisions only. */
  readonly owner?: string;
  /** ISO time; rows at or after it. */
  readonly since?: string;
  /** Rows older than this sequence number (the page before). */
  readonly beforeSeq?: number;
  /** Leave out the row of this decision (the listing's own). */
  readonly skipDecision?: string;
  readonly limit: number;
}

/** `field` equals `pattern`, or starts with it when it ends in `*` (the policy's own pattern form), compared exactly. */
function matching(field: string, pattern: string, where: string[], params: unknown[]): void {
  if (pattern.endsWith('*')) {
    const prefix = pattern.slice(0, -1);
    where.push(`substr(${field}, 1, ?) = ?`);
    params.push([...prefix].length, prefix);
  } else {
    where.push(`${field} = ?`);
    params.push(pattern);
  }
}

/** Rows newest first, filtered in SQL (bodies are JSON text), up to `limit`. */
export function listAudit(db: Db, f: AuditFilter): ChainRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  const decisionsOnly = f.allow !== undefined || f.action !== undefined || f.project !== undefined || f.owner !== undefined;
  if (decisionsOnly) where.push("kind = 'decision'");
  if (f.allow !== undefined) where.push(`json_extract(body, '$.allow') = ${f.allow ? 1 : 0}`);
  if (f.action !== undefined) matching("json_extract(body, '$.action')", f.action, where, params);
  if (f.project !== undefined) {
    where.push("json_extract(body, '$.project') = ?");
    params.push(f.project);
  }
  if (f.owner !== undefined) matching("json_extract(body, '$.principal.owner')", f.owner, where, params);
  if (f.since !== undefined) {
    where.push('at >= ?');
    params.push(f.since);
  }
  if (f.beforeSeq !== undefined) {
    where.push('seq < ?');
    params.push(f.beforeSeq);
  }
  if (f.skipDecision !== undefined) {
    where.push("NOT (kind = 'decision' AND json_extract(body, '$.decision_id') = ?)");
    params.push(f.skipDecision);
  }
  const sqlText = `SELECT seq, at, kind, body, prev, hash FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
  const rows = db.prepare(sqlText).all(...params, f.limit) as Row[];
  return rows.map((r) => ({ seq: r.seq, at: r.at, kind: r.kind, body: JSON.parse(r.body), prev: r.prev, hash: r.hash }));
}

/** The row that recorded decision `id`, or undefined. */
export function findDecision(db: Db, id: string): ChainRow | undefined {
  const r = db.prepare("SELECT seq, at, kind, body, prev, hash FROM audit WHERE kind = 'decision' AND json_extract(body, '$.decision_id') = ? LIMIT 1").get(id) as Row | undefined;
  return r ? { seq: r.seq, at: r.at, kind: r.kind, body: JSON.parse(r.body), prev: r.prev, hash: r.hash } : undefined;
}

/** One row by its sequence number, or undefined. */
export function auditRow(db: Db, seq: number): ChainRow | undefined {
  const r = db.prepare('SELECT seq, at, kind, body, prev, hash FROM audit WHERE seq = ?').get(seq) as Row | undefined;
  return r ? { seq: r.seq, at: r.at, kind: r.kind, body: JSON.parse(r.body), prev: r.prev, hash: r.hash } : undefined;
}

/** The other rows that name decision `id` (what followed it: a spawn, an HTTP outcome), oldest first. */
export function rowsOfDecision(db: Db, id: string, limit: number): ChainRow[] {
  const rows = db.prepare("SELECT seq, at, kind, body, prev, hash FROM audit WHERE kind != 'decision' AND json_extract(body, '$.decision_id') = ? ORDER BY seq LIMIT ?").all(id, limit) as Row[];
  return rows.map((r) => ({ seq: r.seq, at: r.at, kind: r.kind, body: JSON.parse(r.body), prev: r.prev, hash: r.hash }));
}
