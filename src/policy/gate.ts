/*
 * The one enforcement point. Every tool call, resource read, HTTP request, job,
 * approval, rollback, outbound connection and state change passes through here.
 *
 *   enforce(env, request, run)           one request
 *   admit(env, [outer, inner…])          several that arrive together (an HTTP request and the
 *                                        tool call it carries), decided in one transaction
 *     ─► BEGIN IMMEDIATE (the audit write lock)
 *     ─► project trust read here, when the caller left it to the gate
 *     ─► validate request (schemas/gate-request.schema.json)
 *     ─► authorize(request, policy)      pure decision
 *     ─► audit row {decision, masked args, policy hash}; a denial stops the list
 *     ─► COMMIT
 *     ─► denied?  SC_POLICY_DENIED naming the rules (their texts are built only now)
 *     ─► run(ticket)                     the ticket opens executors
 *
 * The rows are committed before any ticket exists, and a failed write denies:
 * nothing happens that the log does not show.
 */
import { randomUUID } from 'node:crypto';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { ScError } from '../errors.js';
import { check } from '../schema/validate.js';
import { type AuditRow, appendAuditRows } from '../store/audit.js';
import type { Db } from '../store/db.js';
import { type GateTicket, mintTicket } from '../ticket.js';
import { authorize, type Decision } from './authorize.js';
import type { Policy } from './load.js';
import { lazyScrubber, redact } from './redact.js';

export type { GateRequest };

/** A request whose project the gate may fill in (inside its transaction, from GateEnv.project). */
export type PendingRequest = Omit<GateRequest, 'project'> & Partial<Pick<GateRequest, 'project'>>;

export interface GateEnv {
  readonly policy: Policy;
  /** Opened on first use: a denied request that never reaches the store still needs its row. */
  readonly db: () => Db;
  /**
   * The project's trust as stored now. The gate reads it inside the transaction
   * that records the decision, so `untrust` cannot slip between read and decision.
   */
  readonly project?: (db: Db) => GateRequest['project'];
}

export interface Explained extends Decision {
  readonly rules: ReadonlyArray<{ id: string; effect: string; description: string }>;
}

function rulesOf(policy: Policy, d: Decision): Explained['rules'] {
  return d.reasons.map((id) => {
    const r = policy.permissions.rules.find((x) => x.id === id);
    return r ? { id, effect: r.effect, description: r.description } : { id, effect: 'forbid', description: 'no rule permits this action' };
  });
}

function validated(request: PendingRequest): GateRequest {
  return check<GateRequest>('gate-request', request, 'SC_POLICY_REQUEST_INVALID', 'gate request');
}

/** The decision with each reason's rule text; for `policy explain` and for denial messages. */
export function explain(policy: Policy, request: GateRequest): Explained {
  const d = authorize(validated(request), policy.permissions);
  return { ...d, rules: rulesOf(policy, d) };
}

/** One decided request: a ticket to run with, or the denial to report. */
export type Admission =
  | { readonly decisionId: string; readonly request: GateRequest; readonly ticket: GateTicket; readonly denied?: undefined }
  | { readonly decisionId: string; readonly request: GateRequest; readonly ticket?: undefined; readonly denied: ScError };

interface Decided {
  readonly request: GateRequest;
  readonly decision: Decision;
  readonly decisionId: string;
}

/** `clean`: one scrubber for every row of a transaction (it checks the secret store once). */
function decisionRow(policy: Policy, req: GateRequest, d: Decision, decisionId: string, clean: (text: string) => string): AuditRow {
  const chars = policy.limits.audit.string_chars;
  return {
    kind: 'decision',
    body: {
      decision_id: decisionId,
      action: req.action,
      principal: req.principal,
      project: req.project?.path ?? null,
      resource: req.resource ? redact(req.resource, chars, clean) : undefined,
      requested_level: req.requested_level,
      allow: d.allow,
      reasons: d.reasons,
      ceiling: d.ceiling,
      policy_hash: policy.hash,
      args: req.args ? redact(req.args, chars, clean) : undefined,
    },
  };
}

/**
 * Decides `requests` in order and records every decision in one audit
 * transaction. The list stops at the first denial: what follows a denied
 * request is never decided. Returns one admission per decided request; tickets
 * are minted only after the commit.
 */
export function admit(env: GateEnv, requests: readonly PendingRequest[]): Admission[] {
  // Requests that carry their project are checked before the store opens; the rest once trust is read.
  const early = requests.map((r) => (r.project !== undefined || !env.project ? validated(r) : undefined));
  const decided: Decided[] = [];
  try {
    const db = env.db();
    appendAuditRows(db, () => {
      decided.length = 0;
      const rows: AuditRow[] = [];
      const clean = lazyScrubber();
      // Read once per transaction: the requests decided together see the same trust, under the same lock.
      let project: GateRequest['project'] | undefined;
      for (const [i, r] of requests.entries()) {
        const request = early[i] ?? validated({ ...r, project: (project ??= env.project!(db)) });
        const decision = authorize(request, env.policy.permissions);
        const decisionId = randomUUID();
        decided.push({ request, decision, decisionId });
        rows.push(decisionRow(env.policy, request, decision, decisionId, clean));
        if (!decision.allow) break;
      }
      return rows;
    });
  } catch (err) {
    if (err instanceof ScError) throw err;
    const action = requests.map((r) => r.action).join(', ');
    throw new ScError('SC_STORE_FAILED', `cannot record the decision for ${action}: ${(err as Error).message}`);
  }
  return decided.map(({ request, decision: d, decisionId }) => {
    if (d.allow) return { decisionId, request, ticket: mintTicket({ decisionId, action: request.action, ceiling: d.ceiling, owner: request.principal.owner }) };
    const why = rulesOf(env.policy, d).map((r) => `${r.id} (${r.description})`).join('; ');
    const denied = new ScError('SC_POLICY_DENIED', `${request.action} denied by ${why}`, {
      decision_id: decisionId,
      action: request.action,
      reasons: [...d.reasons],
      ceiling: d.ceiling,
    });
    return { decisionId, request, denied };
  });
}

/** Decides one request, records it, and runs `run` with its ticket only if allowed. */
export async function enforce<T>(env: GateEnv, request: PendingRequest, run: (ticket: GateTicket, request: GateRequest) => T | Promise<T>): Promise<T> {
  const [a] = admit(env, [request]) as [Admission];
  if (a.denied) throw a.denied;
  return run(a.ticket, a.request);
}
