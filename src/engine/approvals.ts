/*
 * Exact approvals: one row per action a job asks to take, decided once.
 *
 *   job asks ─► row (pending) ─► gate (cli:approvals.approve|deny, tool:shadow_approve.approve|deny
 *   naming this approval) ─► decideApproval(ticket, …) (CLI, a connection with --allow-approvals,
 *   the run and test prompts, the console, a host; any process) ─► approved | denied
 *   the engine running the job ─► Decisions.notify (pushed) or a poll of the
 *   store (a temporary engine) ─► the waiter wakes and acts on the row as stored
 *
 * The row is the truth: a waiter always reads the decision back from the store,
 * never from the message that woke it.
 */
import { EventEmitter } from 'node:events';
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { addEvent, getJob, now, setState } from './job-events.js';

export type { ApprovalRow } from './job-types.js';
import type { ApprovalRow } from './job-types.js';

export function getApproval(db: Db, id: string): ApprovalRow | undefined {
  const r = sql(db, 'SELECT * FROM approvals WHERE id = ?').get(id) as Record<string, unknown> | undefined;
  return r ? ({ ...r, action: JSON.parse(r.action as string) } as ApprovalRow) : undefined;
}

export function pendingApprovals(db: Db, where: { project: string; jobId?: string }): Array<ApprovalRow & { owner: string }> {
  const rows = sql(
    db,
    `SELECT a.*, j.owner AS owner FROM approvals a JOIN jobs j ON j.id = a.job_id
     WHERE j.project = ? AND a.state = 'pending' AND (? IS NULL OR a.job_id = ?) ORDER BY a.created_at, a.id`,
  ).all(where.project, where.jobId ?? null, where.jobId ?? null) as Array<Record<string, unknown>>;
  return rows.map((r) => ({ ...r, action: JSON.parse(r.action as string) }) as ApprovalRow & { owner: string });
}

/** The gate actions whose tickets may record each decision; the ticket must also name the approval. */
export const DECISION_ACTIONS = {
  approved: ['cli:approvals.approve', 'tool:shadow_approve.approve'],
  denied: ['cli:approvals.deny', 'tool:shadow_approve.deny'],
} as const;

/**
 * Records an approval decision if it is still pending. Returns the approval as it now stands.
 * Only a ticket for this decision on this very approval opens it: a deny ticket does not
 * approve, and a ticket for one approval decides no other (SC_TICKET_REFUSED, nothing changes).
 * A test job's one approval also moves the job at once: approved, it is queued for a run
 * slot; denied, it is cancelled (its engine only starts what is queued).
 */
export function decideApproval(ticket: GateTicket, db: Db, id: string, decision: 'approved' | 'denied', by: string): ApprovalRow {
  assertTicket(ticket, DECISION_ACTIONS[decision], { kind: 'approval', id });
  return db.transaction(() => {
    const changed = sql(db, "UPDATE approvals SET state = ?, decided_at = ?, decided_by = ? WHERE id = ? AND state = 'pending'").run(decision, now(), by, id).changes;
    const a = getApproval(db, id);
    if (!a) throw new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(id)}`);
    if (changed === 0) throw new ScError('SC_APPROVAL_NOT_PENDING', `approval ${id} is already ${a.state}`);
    addEvent(db, a.job_id, `approval_${decision}`, { approval_id: id, by });
    const job = getJob(db, a.job_id);
    if (job?.kind === 'test' && a.kind === 'command' && job.state === 'waiting_approval') setState(db, job.id, decision === 'approved' ? 'queued' : 'cancelled');
    return a;
  }).immediate();
}

/** Cancels whatever the job still has pending (the job ended, or will never run). */
export function cancelPending(db: Db, jobId: string, by: string): void {
  sql(db, "UPDATE approvals SET state = 'cancelled', decided_at = ?, decided_by = ? WHERE job_id = ? AND state = 'pending'").run(now(), by, jobId);
}

/** Who waits for which decision in this process, woken by a push or, if pollMs is set, by re-reading the store. */
export class Decisions {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  constructor(private readonly db: () => Db, private readonly pollMs: number | null) {}

  /** Calls fn when approval `approvalId` is decided (pushed by notify). Returns the unsubscribe. */
  on(approvalId: string, fn: () => void): () => void {
    this.emitter.on(approvalId, fn);
    return () => this.emitter.off(approvalId, fn);
  }

  notify(approvalId: string): void {
    this.emitter.emit(approvalId);
  }

  /** Wakes every waiter to re-read its row: a decision may have been recorded without reaching us. */
  recheckAll(): void {
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  /** Waits until the approval is no longer pending and returns its state as stored. */
  wait(approvalId: string, signal?: AbortSignal): Promise<ApprovalRow['state']> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        off();
        if (timer) clearInterval(timer);
        signal?.removeEventListener('abort', abort);
      };
      const check = () => {
        const a = getApproval(this.db(), approvalId);
        if (!a) {
          done();
          reject(new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(approvalId)}`));
        } else if (a.state !== 'pending') {
          done();
          resolve(a.state);
        }
      };
      const abort = () => {
        done();
        reject(signal?.reason instanceof Error ? signal.reason : new ScError('SC_TIMEOUT', 'stopped waiting for an approval'));
      };
      const off = this.on(approvalId, check);
      if (signal?.aborted) return abort();
      signal?.addEventListener('abort', abort, { once: true });
      if (this.pollMs !== null) {
        timer = setInterval(check, this.pollMs);
        timer.unref();
      }
      check();
    });
  }
}
