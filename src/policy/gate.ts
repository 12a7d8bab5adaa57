/*
 * The one enforcement point. Every tool call, resource read, HTTP request, job,
 * approval, rollback, outbound connection and state change passes through here.
 *
 *   enforce(env, request, run)
 *     ─► validate request (schemas/gate-request.schema.json)
 *     ─► authorize(request, policy)              pure decision
 *     ─► append audit row {decision, masked args, policy hash}
 *     ─► denied?  throw SC_POLICY_DENIED naming the rules
 *     ─► run(ticket)                             the ticket opens executors
 *
 * The audit row is written before run() and a failed write denies: nothing
 * happens that the log does not show.
 */
import { randomUUID } from 'node:crypto';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { ScError } from '../errors.js';
import { check } from '../schema/validate.js';
import { appendAudit } from '../store/audit.js';
import type { Db } from '../store/db.js';
import { type GateTicket, mintTicket } from '../ticket.js';
import { authorize, type Decision } from './authorize.js';
import type { Policy } from './load.js';
import { redact } from './redact.js';

export type { GateRequest };

export interface GateEnv {
  readonly policy: Policy;
  /** Opened on first use: a denied request that never reaches the store still needs its row. */
  readonly db: () => Db;
}

export interface Explained extends Decision {
  readonly rules: ReadonlyArray<{ id: string; effect: string; description: string }>;
}

/** The decision with each reason's rule text; for `policy explain` and for denial messages. */
export function explain(policy: Policy, request: GateRequest): Explained {
  const req = check<GateRequest>('gate-request', request, 'SC_POLICY_REQUEST_INVALID', 'gate request');
  const d = authorize(req, policy.permissions);
  const rules = d.reasons.map((id) => {
    const r = policy.permissions.rules.find((x) => x.id === id);
    return r ? { id, effect: r.effect, description: r.description } : { id, effect: 'forbid', description: 'no rule permits this action' };
  });
  return { ...d, rules };
}

export async function enforce<T>(env: GateEnv, request: GateRequest, run: (ticket: GateTicket) => T | Promise<T>): Promise<T> {
  const d = explain(env.policy, request);
  const decisionId = randomUUID();
  try {
    appendAudit(env.db(), 'decision', {
      decision_id: decisionId,
      action: request.action,
      principal: request.principal,
      project: request.project?.path ?? null,
      resource: request.resource ? redact(request.resource, env.policy.limits.audit.string_chars) : undefined,
      requested_level: request.requested_level,
      allow: d.allow,
      reasons: d.reasons,
      ceiling: d.ceiling,
      policy_hash: env.policy.hash,
      args: request.args ? redact(request.args, env.policy.limits.audit.string_chars) : undefined,
    });
  } catch (err) {
    if (err instanceof ScError) throw err;
    throw new ScError('SC_STORE_FAILED', `cannot record the decision for ${request.action}: ${(err as Error).message}`);
  }
  if (!d.allow) {
    const why = d.rules.map((r) => `${r.id} (${r.description})`).join('; ');
    throw new ScError('SC_POLICY_DENIED', `${request.action} denied by ${why}`, {
      decision_id: decisionId,
      action: request.action,
      reasons: [...d.reasons],
      ceiling: d.ceiling,
    });
  }
  return run(mintTicket({ decisionId, action: request.action, ceiling: d.ceiling, owner: request.principal.owner }));
}
