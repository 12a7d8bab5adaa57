/*
 * The append-only audit log. Each row's hash covers the previous row's hash,
 * so editing, removing or reordering a row breaks the chain from there on.
 *
 *   hash(n) = sha256(prev ␊ seq ␊ at ␊ kind ␊ body),  prev(0) = 64 zeros
 *
 * Triggers refuse UPDATE and DELETE; verify() still recomputes everything,
 * because someone with the file can drop a trigger.
 *
 *   appendAuditRows(db, build) ─► BEGIN IMMEDIATE ─► head ─► deferred rows, then build()'s rows ─► COMMIT
 *   deferAudit(db, row)        ─► queued; rides with the next commit, or flushed within the bound
 *   after each commit ─► the listener, if one is set (telemetry's log export: src/telemetry/sdk.ts)
 *
 * One transaction per batch: each commit costs a lock round and an fsync-free WAL
 * write, which is most of an audited call.
 */
import type { AuditReport } from '../../gen/types/audit-report.js';
import { sha256 } from '../util/canonical-json.js';
import { isoTime } from '../util/iso-time.js';
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

export interface AuditRow {
  readonly kind: string;
  /** Already redacted; stored as its JSON text. */
  readonly body: unknown;
}

interface Text {
  readonly kind: string;
  readonly text: string;
}

/** Rows recorded after the fact (an HTTP outcome): they ride with the next commit, or a flush within the bound. */
interface Deferred {
  rows: Text[];
  timer: NodeJS.Timeout | undefined;
}

export interface DeferBound {
  /** Flush at the latest this long after the first deferred row. */
  readonly flush_ms: number;
  /** Flush at once when this many rows wait. */
  readonly rows: number;
}

/** A row as committed: what `audit verify` checks, for a listener that keeps a copy elsewhere. */
export interface CommittedAudit {
  readonly seq: number;
  readonly at: string;
  readonly kind: string;
  /** The body as stored (JSON text, already redacted). */
  readonly body: string;
  readonly prev: string;
  readonly hash: string;
}

let listener: ((rows: readonly CommittedAudit[]) => void) | undefined;

/** Sets the one listener told of rows after each commit (telemetry's log export), or clears it. */
export function onAuditCommitted(fn: ((rows: readonly CommittedAudit[]) => void) | undefined): void {
  listener = fn;
}

const writers = new WeakMap<Db, (build: () => readonly Text[]) => number[]>();
const deferred = new WeakMap<Db, Deferred>();

function writer(db: Db): (build: () => readonly Text[]) => number[] {
  let fn = writers.get(db);
  if (!fn) {
    const head = sql(db, 'SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1');
    const insert = sql(db, 'INSERT INTO audit (seq, at, kind, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)');
    const tx = db.transaction((build: () => readonly Text[], written: CommittedAudit[] | undefined) => {
      // The head is read under the write lock: another process appending waits for us, or we for it.
      const last = head.get() as { seq: number; hash: string } | undefined;
      let seq = last?.seq ?? 0;
      let prev = last?.hash ?? GENESIS;
      const waiting = deferred.get(db)?.rows ?? [];
      const rows = waiting.length ? [...waiting, ...build()] : build();
      const at = isoTime();
      const seqs: number[] = [];
      for (const r of rows) {
        seq++;
        const hash = rowHash(prev, seq, at, r.kind, r.text);
        insert.run(seq, at, r.kind, r.text, prev, hash);
        written?.push({ seq, at, kind: r.kind, body: r.text, prev, hash });
        prev = hash;
        seqs.push(seq);
      }
      return seqs.slice(waiting.length);
    });
    // Immediate: the read of the last row and the insert must not interleave with another process.
    fn = (build) => {
      const tell = listener;
      const written: CommittedAudit[] | undefined = tell ? [] : undefined;
      const seqs = tx.immediate(build, written) as number[];
      // Committed: the rows that rode along are on disk now.
      const d = deferred.get(db);
      if (d) {
        d.rows = [];
        if (d.timer) clearTimeout(d.timer);
        d.timer = undefined;
      }
      if (tell && written) tell(written);
      return seqs;
    };
    writers.set(db, fn);
  }
  return fn;
}

/** Appends one row; callers pass already-redacted bodies. Returns the row's sequence number. */
export function appendAudit(db: Db, kind: string, body: unknown): number {
  return writer(db)(() => [{ kind, text: JSON.stringify(body) }])[0] as number;
}

/**
 * Appends rows in one write transaction. `build` runs inside it, holding the
 * write lock, so what it reads (a project's trust) cannot change before the rows
 * that depend on it commit. Any deferred rows are written first, in order.
 */
export function appendAuditRows(db: Db, build: () => readonly AuditRow[]): number[] {
  return writer(db)(() => build().map((r) => ({ kind: r.kind, text: JSON.stringify(r.body) })));
}

/**
 * Records a row after the fact without a commit of its own: it is written with
 * the next append on this connection, or by a flush within `bound`. Only for rows
 * that follow an action already decided and recorded (never a decision).
 */
export function deferAudit(db: Db, kind: string, body: unknown, bound: DeferBound): void {
  let d = deferred.get(db);
  if (!d) deferred.set(db, (d = { rows: [], timer: undefined }));
  d.rows.push({ kind, text: JSON.stringify(body) });
  if (d.rows.length >= bound.rows) return void tryFlush(db);
  if (!d.timer) {
    d.timer = setTimeout(() => tryFlush(db), bound.flush_ms);
    // The timer never keeps a process alive: closing the store flushes.
    d.timer.unref();
  }
}

function tryFlush(db: Db): void {
  const d = deferred.get(db);
  if (d) d.timer = undefined;
  try {
    flushAudit(db);
  } catch {
    // The rows stay queued and ride with the next commit.
  }
}

/** Writes deferred rows now; call before closing the database. */
export function flushAudit(db: Db): void {
  const d = deferred.get(db);
  if (!d || d.rows.length === 0 || !db.open) return;
  writer(db)(() => []);
}

/** How many rows wait for a commit (for tests and status). */
export function deferredAuditRows(db: Db): number {
  return deferred.get(db)?.rows.length ?? 0;
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
