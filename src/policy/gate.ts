/*
 * The one enforcement point. Every tool call, resource read, HTTP request, job,
 * approval, rollback, outbound connection and state change passes through here.
 *
 *   enforce(env, request, run)           one request
 *   admit(env, [outer, inner…])          several that arrive together (an HTTP request and the
 *                                        tool call it carries), decided in one transaction
 *   admit(env, {groups: [[…], […]]})     independent lists decided in one transaction (group commit:
 *                                        the HTTP requests of one event-loop turn); each stops at its
 *                                        own denial, and no ticket of any exists before the commit
 *     ─► BEGIN IMMEDIATE (the audit write lock)
 *     ─► the project's trust read here, from the store, for every request that names a project:
 *          left to the gate        GateEnv.project reads it (the connection, the net proxy)
 *          carried by the caller   only its path counts: trusted, level and network are read
 *                                  again (getProject, once per path per transaction) and what
 *                                  the caller passed is dropped
 *     ─► validate request (schemas/gate-request.schema.json), add project.holds_home
 *     ─► authorize(request, policy)      pure decision
 *     ─► audit row {decision, masked args, policy hash}; a denial stops the list
 *     ─► COMMIT
 *     ─► telemetry (when on): one guardrail span per decision, under the caller's span
 *     ─► denied?  SC_POLICY_DENIED (or the deciding rule's own code) naming the rules
 *     ─► run(ticket)                     the ticket opens the executors of that action (and record) only
 *
 * The rows are committed before any ticket exists, and a failed write denies:
 * nothing happens that the log does not show.
 *
 * Trust is decided on as stored when the decision is made, under the write lock an
 * `untrust` (or `trust --level`) must take to change it: a caller that read "trusted"
 * a moment before cannot carry that into a decision after another process's
 * `untrust` committed. A
 * project the store does not know is untrusted at read_only without network (the
 * store's own default). The audit row's `trust` is the stored trust decided on, and
 * the request a ticket runs with carries it. `explain()` is a pure what-if: it
 * decides the request as given (`policy explain`, and `--decision` replaying a row's
 * recorded trust) and reads nothing.
 */
import { randomUUID } from 'node:crypto';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { type ErrorCode, isErrorCode, ScError } from '../errors.js';
import { check } from '../schema/validate.js';
import { type AuditRow, appendAuditRows } from '../store/audit.js';
import type { Db } from '../store/db.js';
import { getProject } from '../store/projects.js';
import { tel } from '../telemetry/hooks.js';
import { type GateTicket, mintTicket } from '../ticket.js';
import { authorize, type Decision } from './authorize.js';
import { holdsHome } from './home.js';
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
  /** The user's home folders, for project.holds_home (src/policy/home.ts); by default this process's. */
  readonly homes?: readonly string[];
}

/** One rule that decided, in words. */
export interface RuleText {
  readonly id: string;
  readonly effect: string;
  readonly description: string;
}

export interface Explained extends Decision {
  readonly rules: readonly RuleText[];
}

/** The text of each rule id in `policy` (a recorded id the policy no longer has says so). */
export function ruleTexts(policy: Policy, reasons: readonly string[]): RuleText[] {
  return reasons.map((id) => {
    const r = policy.permissions.rules.find((x) => x.id === id);
    if (r) return { id, effect: r.effect, description: r.description };
    if (id === 'default-deny') return { id, effect: 'forbid', description: 'no rule permits this action' };
    if (id === 'authorize-error') return { id, effect: 'forbid', description: 'the decision failed, which denies' };
    return { id, effect: 'unknown', description: 'a rule the policy in force now does not have' };
  });
}

function rulesOf(policy: Policy, d: Decision): Explained['rules'] {
  return ruleTexts(policy, d.reasons);
}

/** The request checked against its schema, with what the gate itself knows of the project added: whether it holds the home folder. */
function validated(request: PendingRequest, homes?: readonly string[]): GateRequest {
  const r = check<GateRequest>('gate-request', request, 'SC_POLICY_REQUEST_INVALID', 'gate request');
  return r.project ? { ...r, project: { ...r.project, holds_home: holdsHome(r.project.path, homes) } } : r;
}

type Trust = NonNullable<GateRequest['project']>;

/** `request` with its project's trust as the store holds it now (the path is what the caller names; holds_home follows the path). */
function withStoredTrust(db: Db, request: GateRequest, read: Map<string, Trust>): GateRequest {
  const p = request.project;
  if (!p) return request;
  let stored = read.get(p.path);
  if (!stored) {
    const rec = getProject(db, p.path);
    read.set(p.path, (stored = { path: p.path, trusted: rec.trusted, level: rec.level, network: rec.network }));
  }
  return { ...request, project: { ...stored, holds_home: p.holds_home } };
}

/** The decision with each reason's rule text; for `policy explain` and for denial messages. */
export function explain(policy: Policy, request: GateRequest, homes?: readonly string[]): Explained {
  const d = authorize(validated(request, homes), policy.permissions);
  return { ...d, rules: rulesOf(policy, d) };
}

/** The code of a denial: the first deciding forbid rule's own code (a known one), else SC_POLICY_DENIED. */
function denialCode(policy: Policy, d: Decision): ErrorCode {
  for (const id of d.reasons) {
    const code = policy.permissions.rules.find((r) => r.id === id)?.code;
    if (code && isErrorCode(code)) return code;
  }
  return 'SC_POLICY_DENIED';
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
      // The trust the decision saw, so `policy explain --decision` can decide the same request again.
      trust: req.project ? { trusted: req.project.trusted, level: req.project.level, ...(req.project.network !== undefined ? { network: req.project.network } : {}) } : undefined,
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

/** The record a ticket is good for: the one its request named, so an executor that changes one record can insist on it. */
function ticketResource(req: GateRequest): { resource?: { kind: string; id: string } } {
  const r = req.resource;
  return r?.kind !== undefined && r.id !== undefined ? { resource: { kind: r.kind, id: r.id } } : {};
}

/** Independent lists of requests decided in one transaction (group commit): each list stops at its own first denial. */
export interface Groups {
  readonly groups: readonly (readonly PendingRequest[])[];
}

/** What one list of a group commit got: its admissions, or the error that kept the whole list undecided (no row, no ticket). */
export type GroupResult = Admission[] | ScError;

/**
 * Decides `requests` in order and records every decision in one audit
 * transaction. The list stops at the first denial: what follows a denied
 * request is never decided. Returns one admission per decided request; tickets
 * are minted only after the commit.
 *
 * Given `{ groups }`, it decides several independent lists in that one
 * transaction (the HTTP gateway's group commit: requests that arrived together).
 * A list that fails validation is left out whole, with its error, and the
 * others are still decided; a failed commit fails them all. No ticket of any
 * list exists before every row of the transaction is committed.
 */
export function admit(env: GateEnv, requests: readonly PendingRequest[]): Admission[];
export function admit(env: GateEnv, requests: Groups): GroupResult[];
export function admit(env: GateEnv, requests: readonly PendingRequest[] | Groups): Admission[] | GroupResult[] {
  const single = Array.isArray(requests);
  const lists = single ? [requests as readonly PendingRequest[]] : (requests as Groups).groups;
  // Requests that carry their project are checked before the store opens; the rest once trust is read.
  const failed: (ScError | undefined)[] = lists.map(() => undefined);
  const early = lists.map((list, g) => {
    try {
      return list.map((r) => (r.project !== undefined || !env.project ? validated(r, env.homes) : undefined));
    } catch (err) {
      // One list alone: its error is the caller's, as it always was.
      if (single || !(err instanceof ScError)) throw err;
      failed[g] = err;
      return [];
    }
  });
  const decided: Decided[][] = lists.map(() => []);
  const t = tel();
  const started = t ? Date.now() : 0;
  try {
    const db = env.db();
    appendAuditRows(db, () => {
      const rows: AuditRow[] = [];
      const clean = lazyScrubber();
      // Read once per transaction: the requests decided together see the same trust, under the same lock.
      let project: GateRequest['project'] | undefined;
      const stored = new Map<string, Trust>();
      for (const [g, list] of lists.entries()) {
        decided[g] = [];
        if (failed[g] && !single) continue;
        // A list's rows join the transaction only once the whole list is decided: a bad request leaves none of its list.
        const mine: Decided[] = [];
        const theirs: AuditRow[] = [];
        try {
          for (const [i, r] of list.entries()) {
            const carried = early[g]?.[i];
            const request = carried ? withStoredTrust(db, carried, stored) : validated({ ...r, project: (project ??= env.project!(db)) }, env.homes);
            const decision = authorize(request, env.policy.permissions);
            const decisionId = randomUUID();
            mine.push({ request, decision, decisionId });
            theirs.push(decisionRow(env.policy, request, decision, decisionId, clean));
            if (!decision.allow) break;
          }
        } catch (err) {
          if (single || !(err instanceof ScError) || err.code !== 'SC_POLICY_REQUEST_INVALID') throw err;
          failed[g] = err;
          continue;
        }
        decided[g] = mine;
        rows.push(...theirs);
      }
      return rows;
    });
  } catch (err) {
    if (err instanceof ScError) throw err;
    const action = lists.flat().map((r) => r.action).join(', ');
    throw new ScError('SC_STORE_FAILED', `cannot record the decision for ${action}: ${(err as Error).message}`);
  }
  if (t) t.decided(decided.flat().map(({ request: r, decision: d, decisionId }) => ({ action: r.action, principal: r.principal.kind, allow: d.allow, reasons: d.reasons, decisionId, ceiling: d.ceiling, args: r.args })), env.policy.hash, started);
  const out = decided.map((list, g): GroupResult => failed[g] ?? list.map(({ request, decision: d, decisionId }) => {
    if (d.allow) return { decisionId, request, ticket: mintTicket({ decisionId, action: request.action, ceiling: d.ceiling, owner: request.principal.owner, ...ticketResource(request) }) };
    const why = rulesOf(env.policy, d).map((r) => `${r.id} (${r.description})`).join('; ');
    const denied = new ScError(denialCode(env.policy, d), `${request.action} denied by ${why}`, {
      decision_id: decisionId,
      action: request.action,
      reasons: [...d.reasons],
      ceiling: d.ceiling,
    });
    return { decisionId, request, denied };
  }));
  return single ? (out[0] as Admission[]) : out;
}

/** Decides one request, records it, and runs `run` with its ticket only if allowed. */
export async function enforce<T>(env: GateEnv, request: PendingRequest, run: (ticket: GateTicket, request: GateRequest) => T | Promise<T>): Promise<T> {
  const [a] = admit(env, [request]) as [Admission];
  if (a.denied) throw a.denied;
  return run(a.ticket, a.request);
}
