/*
 * Job rows and their event log: what every reader (a tool, a CLI command, the
 * console) sees of a job, and the one way a job's state changes.
 *
 *   setState(id, s) ─► jobs.state + a 'state' event, together
 *   addEvent(id, kind, body) ─► job_events (append only, seq orders them)
 *   getJob | listJobs | jobEvents | jobAnswer ─► read back, cursor-paged
 */
import { scrubDeep } from '../policy/scrub.js';
import { type Db, sql } from '../store/db.js';
import { tel } from '../telemetry/hooks.js';
import { decodeCursor, encodeCursor, type Page } from '../util/cursor.js';

export type { JobRow, JobState } from './job-types.js';
import type { JobRow, JobState } from './job-types.js';

/** The states of a job that has not ended, as an SQL list. */
export const ACTIVE = "('queued', 'running', 'waiting_approval')";

export function now(): string {
  return new Date().toISOString();
}

function toJob(r: Record<string, unknown> | undefined): JobRow | undefined {
  return r ? ({ ...r, argv: r.argv ? (JSON.parse(r.argv as string) as string[]) : null } as JobRow) : undefined;
}

export function getJob(db: Db, id: string): JobRow | undefined {
  return toJob(sql(db, 'SELECT * FROM jobs WHERE id = ?').get(id) as Record<string, unknown> | undefined);
}

/** Every event is scrubbed of known secret values (policy/scrub.ts) before it is stored. */
export function addEvent(db: Db, jobId: string, kind: string, body: unknown): void {
  sql(db, 'INSERT INTO job_events (job_id, at, kind, body) VALUES (?, ?, ?, ?)').run(jobId, now(), kind, JSON.stringify(scrubDeep(body)));
}

export function jobEvents(db: Db, jobId: string, opts: { limit: number; cursor?: string }): Page<{ seq: number; at: string; kind: string; body: unknown }> {
  const after = opts.cursor ? (decodeCursor(opts.cursor, 1)[0] as number) : 0;
  const rows = sql(db, 'SELECT seq, at, kind, body FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(jobId, after, opts.limit + 1) as Array<{ seq: number; at: string; kind: string; body: string }>;
  const items = rows.slice(0, opts.limit).map((r) => ({ ...r, body: JSON.parse(r.body) as unknown }));
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > opts.limit && last ? encodeCursor([last.seq]) : null };
}

/** An agent task's final answer ({state, summary, reason, usage, steps}), or null while it runs. */
export function jobAnswer(db: Db, jobId: string): unknown {
  const r = sql(db, "SELECT body FROM job_events WHERE job_id = ? AND kind = 'answer' ORDER BY seq DESC LIMIT 1").get(jobId) as { body: string } | undefined;
  return r ? (JSON.parse(r.body) as unknown) : null;
}

/** One owner's jobs in the project, newest first; owner null: every owner's (the CLI user's view). */
export function listJobs(db: Db, project: string, owner: string | null, opts: { limit: number; cursor?: string }): Page<JobRow> {
  const after = opts.cursor ? decodeCursor(opts.cursor, 2) : undefined;
  const rows = (
    sql(db, `SELECT * FROM jobs WHERE project = ? AND (? IS NULL OR owner = ?) AND (? IS NULL OR (created_at, id) < (?, ?)) ORDER BY created_at DESC, id DESC LIMIT ?`).all(
      project, owner, owner, after ? 1 : null, after?.[0] ?? null, after?.[1] ?? null, opts.limit + 1,
    ) as Array<Record<string, unknown>>
  ).map((r) => toJob(r) as JobRow);
  const items = rows.slice(0, opts.limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > opts.limit && last ? encodeCursor([last.created_at, last.id]) : null };
}

export function setState(db: Db, id: string, state: JobState, extra: { exit_code?: number | null; duration_ms?: number } = {}): void {
  sql(db, 'UPDATE jobs SET state = ?, exit_code = coalesce(?, exit_code), duration_ms = coalesce(?, duration_ms), updated_at = ? WHERE id = ?').run(state, extra.exit_code ?? null, extra.duration_ms ?? null, now(), id);
  addEvent(db, id, 'state', { state, ...extra });
  // A final state ends the job's span (telemetry on, and the job opened in this process).
  if (state === 'succeeded' || state === 'failed' || state === 'cancelled') tel()?.jobClosed(id, state);
}
