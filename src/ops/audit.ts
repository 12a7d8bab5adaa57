/*
 * The audit log, read: a filtered page of rows newest first, and one row in full.
 *
 *   listAuditRows(gate, caller, query)
 *     ─► checked query (limit, cursor, since) ─► gate cli:audit.read
 *     ─► rows newest first, filtered in the store, the listing's own decision left out
 *     ─► {rows (as the chain verifies them: seq, at, kind, body, prev, hash), next_cursor}
 *   showAudit(gate, caller, id)          id: a decision id, or a row's sequence number
 *     ─► gate cli:audit.read ─► the row ─► for a decision: its rules in words, and the rows
 *        that followed it (a spawn, an HTTP outcome) ─► {row, rules?, related}
 *   verifyChain(ops)
 *     ─► every row's hash recomputed from the first ─► checked against schemas/audit-report.schema.json
 *        (a broken chain is a report with ok: false and its first break, not an error)
 *
 * Bodies were redacted when they were written; what is printed is scrubbed again on the
 * way out like every output.
 */
import type { AuditReport } from '../../gen/types/audit-report.js';
import { ScError } from '../errors.js';
import { enforce, type GateEnv, ruleTexts, type RuleText } from '../policy/gate.js';
import { check } from '../schema/validate.js';
import { verifyAudit } from '../store/audit.js';
import { auditRow, type ChainRow, findDecision, listAudit, rowsOfDecision } from '../store/audit-read.js';
import { decodeCursor, encodeCursor } from '../util/cursor.js';
import type { OpsEnv } from './context.js';
import type { Caller } from './explain.js';

export type { AuditReport };

export interface AuditQuery {
  readonly decision?: 'allow' | 'deny';
  /** An action, or a family ending in `*`. */
  readonly action?: string;
  /** A canonical project path. */
  readonly project?: string;
  /** An owner label, or a prefix ending in `*`. */
  readonly owner?: string;
  /** ISO time: rows at or after it. */
  readonly since?: string;
  readonly limit?: number;
  readonly cursor?: string;
}

export interface AuditPage {
  readonly rows: readonly ChainRow[];
  readonly next_cursor: string | null;
}

export interface AuditEntryView {
  readonly row: ChainRow;
  /** For a decision: the rules that decided, in the words of the policy in force now. */
  readonly rules?: readonly RuleText[];
  /** Rows that name the same decision (what followed it), oldest first. */
  readonly related: readonly ChainRow[];
}

const SPAN = /^(\d{1,6})([smhd])$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since` as an ISO time: a span back from `now` (30m, 12h, 7d), a local date (2026-12-07, from
 * its midnight) or a date and time (2026-12-07T09:00, local unless it names its zone).
 */
export function sinceOf(text: string, now: Date = new Date()): string {
  const span = SPAN.exec(text);
  if (span) return new Date(now.getTime() - Number(span[1]) * (UNIT_MS[span[2] as string] as number)).toISOString();
  const day = /^(\d{4})-(\d\d)-(\d\d)$/.exec(text);
  const when = day ? new Date(Number(day[1]), Number(day[2]) - 1, Number(day[3])) : /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(text) ? new Date(text) : new Date(Number.NaN);
  if (Number.isNaN(when.getTime())) throw new ScError('SC_BAD_VALUE', '--since takes a span back from now (30m, 12h, 7d), a date (2026-12-07) or a date and time (2026-12-07T09:00)', { option: '--since' });
  return when.toISOString();
}

/** A page of the log, newest first; `max` is the most rows one page may hold (policy/limits.json). */
export async function listAuditRows(gate: GateEnv, caller: Caller, q: AuditQuery, page: { readonly rows: number; readonly max: number }): Promise<AuditPage> {
  const limit = q.limit ?? page.rows;
  if (!Number.isInteger(limit) || limit < 1 || limit > page.max) throw new ScError('SC_BAD_VALUE', `--limit takes a whole number from 1 to ${page.max}`, { option: '--limit' });
  const before = q.cursor === undefined ? undefined : (decodeCursor(q.cursor, 1)[0] as number);
  if (before !== undefined && (!Number.isInteger(before) || before < 1)) throw new ScError('SC_CURSOR_INVALID', 'the cursor is not one audit list issued');
  const args = { ...q, limit };
  return enforce(gate, { action: 'cli:audit.read', ...caller, args }, (ticket) => {
    const rows = listAudit(gate.db(), {
      ...(q.decision ? { allow: q.decision === 'allow' } : {}),
      ...(q.action !== undefined ? { action: q.action } : {}),
      ...(q.project !== undefined ? { project: q.project } : {}),
      ...(q.owner !== undefined ? { owner: q.owner } : {}),
      ...(q.since !== undefined ? { since: q.since } : {}),
      ...(before !== undefined ? { beforeSeq: before } : {}),
      // Reading the log is itself recorded; that row is not what was asked for.
      skipDecision: ticket.decisionId,
      limit: limit + 1,
    });
    const more = rows.length > limit;
    const shown = more ? rows.slice(0, limit) : rows;
    return { rows: shown, next_cursor: more ? encodeCursor([(shown.at(-1) as ChainRow).seq]) : null };
  });
}

/** One row in full, by decision id or sequence number. */
export async function showAudit(gate: GateEnv, caller: Caller, id: string, relatedMax: number): Promise<AuditEntryView> {
  const seq = /^\d{1,15}$/.test(id) ? Number(id) : undefined;
  const row = await enforce(gate, { action: 'cli:audit.read', ...caller, args: { id: id.slice(0, 128) } }, () => (seq !== undefined ? auditRow(gate.db(), seq) : findDecision(gate.db(), id)));
  if (!row) throw new ScError('SC_AUDIT_NOT_FOUND', `no audit row ${JSON.stringify(id.slice(0, 128))} (a decision id, or a row number from shadowcode audit list)`);
  const body = row.body as { decision_id?: unknown; reasons?: unknown };
  const decisionId = typeof body.decision_id === 'string' ? body.decision_id : undefined;
  const related = decisionId ? [...(row.kind === 'decision' ? [] : [findDecision(gate.db(), decisionId)].filter((r): r is ChainRow => r !== undefined)), ...rowsOfDecision(gate.db(), decisionId, relatedMax).filter((r) => r.seq !== row.seq)] : [];
  return { row, ...(row.kind === 'decision' && Array.isArray(body.reasons) ? { rules: ruleTexts(gate.policy, body.reasons as string[]) } : {}), related };
}

/** The audit hash chain recomputed from its first row: intact, or where it first breaks. */
export function verifyChain(ops: Pick<OpsEnv, 'db'>): AuditReport {
  return check<AuditReport>('audit-report', verifyAudit(ops.db()), 'SC_INTERNAL', 'audit report');
}
