/*
 * The append-only audit log. Each row's hash covers the previous row's hash,
 * so editing, removing or reordering a row breaks the chain from there on.
 *
 *   hash(n) = sha256(prev ␊ seq ␊ at ␊ kind ␊ body),  prev(0) = 64 zeros
 *
 * Triggers refuse UPDATE and DELETE; verify() still recomputes everything,
 * because someone with the file can drop a trigger.
 */
import type { AuditReport } from '../../gen/types/audit-report.js';
import { sha256 } from '../util/canonical-json.js';
import { type Db, sql } from './db.js';

export const GENESIS = '0'.repeat(64);

interface Row {
  seq: number;
  at: string;
  kind: string;
  body: string;
  prev: string;
  hash: string;
}

function rowHash(prev: string, seq: number, at: string, kind: string, body: string): string {
  return sha256(`${prev}\n${seq}\n${at}\n${kind}\n${body}`);
}

const appenders = new WeakMap<Db, (kind: string, text: string) => number>();

function appender(db: Db): (kind: string, text: string) => number {
  let fn = appenders.get(db);
  if (!fn) {
    const tx = db.transaction((kind: string, text: string) => {
      const last = sql(db, 'SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1').get() as { seq: number; hash: string } | undefined;
      const seq = (last?.seq ?? 0) + 1;
      const prev = last?.hash ?? GENESIS;
      const at = new Date().toISOString();
      sql(db, 'INSERT INTO audit (seq, at, kind, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)').run(seq, at, kind, text, prev, rowHash(prev, seq, at, kind, text));
      return seq;
    });
    // Immediate: the read of the last row and the insert must not interleave with another process.
    fn = (kind, text) => tx.immediate(kind, text) as number;
    appenders.set(db, fn);
  }
  return fn;
}

/** Appends one row; callers pass already-redacted bodies. Returns the row's sequence number. */
export function appendAudit(db: Db, kind: string, body: unknown): number {
  return appender(db)(kind, JSON.stringify(body));
}

export function verifyAudit(db: Db): AuditReport {
  let prev = GENESIS;
  let expected = 1;
  let rows = 0;
  for (const r of db.prepare('SELECT seq, at, kind, body, prev, hash FROM audit ORDER BY seq').iterate() as IterableIterator<Row>) {
    rows++;
    if (r.seq !== expected) return { ok: false, rows, head: prev, first_break: { seq: r.seq, reason: 'sequence_gap' } };
    if (r.prev !== prev) return { ok: false, rows, head: prev, first_break: { seq: r.seq, reason: 'prev_mismatch' } };
    if (rowHash(r.prev, r.seq, r.at, r.kind, r.body) !== r.hash) return { ok: false, rows, head: prev, first_break: { seq: r.seq, reason: 'hash_mismatch' } };
    prev = r.hash;
    expected++;
  }
  return { ok: true, rows, head: rows ? prev : null };
}

export interface AuditEntry {
  seq: number;
  at: string;
  kind: string;
  body: unknown;
}

/** Reads rows of one kind, newest last; bodies are parsed JSON. */
export function readAudit(db: Db, opts: { kinds?: string[]; afterSeq?: number; limit: number }): AuditEntry[] {
  const kinds = opts.kinds ?? [];
  const where = kinds.length ? `AND kind IN (${kinds.map(() => '?').join(',')})` : '';
  const rows = db.prepare(`SELECT seq, at, kind, body FROM audit WHERE seq > ? ${where} ORDER BY seq LIMIT ?`).all(opts.afterSeq ?? 0, ...kinds, opts.limit) as Row[];
  return rows.map((r) => ({ seq: r.seq, at: r.at, kind: r.kind, body: JSON.parse(r.body) }));
}
