/*
 * Why the gate decides what it decides: the request a real operation puts to it, decided
 * here without recording or running anything; and a recorded decision, read back.
 *
 *   explainAction(policy, query)
 *     ─► requestFor(query): built as the operation that makes the request builds it
 *          cli:*                     you at the command line                  (cli/context.ts)
 *          tool:, resource:, prompt:, http:
 *                                    a connection with its flags; the job, task, approval or
 *                                    goal a tool names is its own, in this project (server/)
 *          engine:submit             whoever submits; its write flag follows the task's level,
 *                                    the job is for this project      (engine/engine-submit.ts)
 *          engine:connect            whoever opens the engine socket, no project
 *          job:run, file:write, background:*, runner:spawn, task:tool.*, model:request,
 *          mcp:connect, mcp:call     the engine, for a task at --level      (engine/, agent/, client/)
 *                                    (mcp:connect --as cli: your review of a server's tools)
 *     ─► authorize (pure) ─► verdict, ceiling, the deciding rules in words, and what was assumed
 *
 *   explainDecision(gate, caller, id)
 *     ─► gate cli:audit.read ─► the decision's audit row
 *     ─► its request rebuilt from the row (principal, project and the trust it saw, level, resource)
 *     ─► decided again under the policy in force now ─► both, with both policy hashes
 *
 * A test replays real decisions from the audit log through explainAction and requires the
 * gate's verdict and rules: a change to how an operation builds its request shows up there.
 */
import type { GateRequest } from '../../gen/types/gate-request.js';
import { ScError } from '../errors.js';
import { explain, enforce, type GateEnv, ruleTexts, type RuleText } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import { findDecision, type ChainRow } from '../store/audit-read.js';
import type { Level } from '../ticket.js';

export type { RuleText };

/** Who asks, as `policy explain --as` names it. */
export type Asker = 'stdio' | 'http' | 'cli';

export interface ActionQuery {
  readonly action: string;
  /** The selected project as stored now; null when none is selected. */
  readonly project: GateRequest['project'];
  /** Who asks; unset: the CLI for cli: actions, else a stdio connection. */
  readonly as?: Asker;
  readonly allowWrite?: boolean;
  readonly allowApprovals?: boolean;
  /** The task's (or shadow_run's) level; unset: workspace for engine work, read_only for shadow_run. */
  readonly level?: Level;
  /** The model or external server is not on loopback. */
  readonly remote?: boolean;
  /** The job, task, approval or goal belongs to another owner. */
  readonly notOwn?: boolean;
  /** The record, or the submitted job, is in another project. */
  readonly otherProject?: boolean;
  /** The CLI user's owner label: cli, or host:NAME for an embedding host. */
  readonly cliOwner: string;
}

export interface ActionExplanation {
  readonly action: string;
  readonly allow: boolean;
  readonly ceiling: Level;
  readonly rules: readonly RuleText[];
  /** The request decided, exactly as the gate validated it. */
  readonly request: GateRequest;
  /** What the request assumed, in words. */
  readonly assumed: readonly string[];
  readonly policy_hash: string;
}

/** Actions the engine asks for while it runs a task, with the kind of record each names. */
const ENGINE_WORK: ReadonlyArray<readonly [string, string]> = [
  ['job:run', 'job'],
  ['file:write', 'file'],
  ['background:start', 'background'],
  ['background:stop', 'background'],
  ['runner:spawn', 'runner'],
  ['task:tool.*', 'tool'],
  ['model:request', 'model'],
  ['mcp:call', 'mcp_tool'],
  ['mcp:connect', 'mcp_server'],
];

/** Tool actions whose request always names a record (server/tools/*: resource()), and its kind. */
const TOOL_RECORDS: ReadonlyArray<readonly [string, string]> = [
  ['tool:shadow_approve.*', 'approval'],
  ['tool:shadow_jobs.events', 'job'],
  ['tool:shadow_jobs.approvals', 'job'],
  ['tool:shadow_jobs.cancel', 'job'],
  ['tool:shadow_review', 'task'],
  ['tool:shadow_rollback', 'task'],
  ['tool:shadow_goal.get', 'goal'],
  ['tool:shadow_goal.advance', 'goal'],
  ['tool:shadow_goal.abandon', 'goal'],
];

const ANOTHER_OWNER = '(another owner)';
const ANOTHER_PROJECT = '(another project)';
const ENDPOINT = new Set(['model:request', 'mcp:connect', 'mcp:call']);

const matches = (pattern: string, action: string) => (pattern.endsWith('*') ? action.startsWith(pattern.slice(0, -1)) : pattern === action);
const kindIn = (table: ReadonlyArray<readonly [string, string]>, action: string) => table.find(([p]) => matches(p, action))?.[1];

function principalOf(as: Asker, q: ActionQuery): GateRequest['principal'] {
  // The person at the CLI is the authority over their own profile: both flags, always (cli/context.ts).
  if (as === 'cli') return { kind: 'cli', owner: q.cliOwner, allow_write: true, allow_approvals: true };
  return { kind: as, owner: `${as}:explain`, allow_write: q.allowWrite === true, allow_approvals: q.allowApprovals === true };
}

function recordOf(kind: string, owner: string, q: ActionQuery, remote: boolean): NonNullable<GateRequest['resource']> {
  const project = q.otherProject ? ANOTHER_PROJECT : q.project?.path;
  return {
    kind,
    owner: q.notOwn ? ANOTHER_OWNER : owner,
    ...(project !== undefined ? { project } : {}),
    ...(remote ? { endpoint_kind: q.remote ? 'remote' : 'loopback' } : {}),
  };
}

/** The request the operation behind `q.action` puts to the gate, and what it assumed. */
export function requestFor(q: ActionQuery): { request: GateRequest; assumed: string[] } {
  const { action, project } = q;
  const assumed: string[] = [];
  let request: GateRequest;
  const work = kindIn(ENGINE_WORK, action);
  if (work !== undefined && !(action === 'mcp:connect' && q.as === 'cli')) {
    // The engine acts for a task: its write flag is the task's level, its owner the task's (agent/loop.ts, engine/jobs.ts).
    const level = q.level ?? 'workspace';
    const owner = `${q.as ?? 'stdio'}:explain`;
    request = {
      action,
      principal: { kind: 'engine', owner, allow_write: level !== 'read_only', allow_approvals: false },
      project,
      requested_level: level,
      resource: recordOf(work, owner, q, ENDPOINT.has(action)),
    };
    assumed.push(`the engine asks, for a task at level ${level}${q.level ? '' : ' (--level to change)'}`);
  } else if (action === 'engine:submit') {
    // Whoever submits; the write flag follows the task's level, not the connection's flags (engine-submit.ts admitJob).
    const as = q.as ?? 'stdio';
    const level = q.level ?? 'workspace';
    const principal = { ...principalOf(as, q), allow_write: level !== 'read_only', allow_approvals: false };
    request = { action, principal, project, requested_level: level, resource: recordOf('job', principal.owner, { ...q, notOwn: false }, false) };
    assumed.push(`${as === 'cli' ? 'you at the command line submit' : `a ${as} connection submits`} a job at level ${level}${q.level ? '' : ' (--level to change)'}, for ${q.otherProject ? 'another project' : 'this project'}`);
  } else if (action === 'engine:connect') {
    const as = q.as ?? 'cli';
    request = { action, principal: { ...principalOf(as, q), allow_write: false, allow_approvals: false }, project: null, resource: { kind: 'engine' } };
    assumed.push(`${as === 'cli' ? 'the command line' : `a ${as} connection`} opens a socket to the profile's shared engine`);
  } else {
    const as = q.as ?? (action.startsWith('cli:') || action === 'mcp:connect' ? 'cli' : 'stdio');
    const principal = principalOf(as, q);
    const level = q.level ?? (action === 'tool:shadow_run' ? 'read_only' : undefined);
    const record = action.startsWith('tool:') ? kindIn(TOOL_RECORDS, action) : undefined;
    // Your review of a server's tools names the server (client/review.ts); a tool call, the record it touches.
    const resource = action === 'mcp:connect' ? recordOf('mcp_server', principal.owner, q, true) : record || q.notOwn || q.otherProject ? recordOf(record ?? 'self', principal.owner, q, false) : undefined;
    request = {
      action,
      principal,
      project,
      ...(level ? { requested_level: level } : {}),
      ...(resource ? { resource } : {}),
    };
    if (as === 'cli') assumed.push('you at the command line ask');
    else assumed.push(`a ${as} connection asks, ${principal.allow_write ? 'with --allow-write' : 'without --allow-write'}${principal.allow_approvals ? ' and --allow-approvals' : ''}`);
    if (level) assumed.push(`at level ${level}${q.level ? '' : ' (permission_level unset; --level to change)'}`);
    if (record) assumed.push(`the ${record} it names belongs to ${q.notOwn ? 'another owner' : 'that connection'}, in ${q.otherProject ? 'another project' : 'this project'}`);
  }
  if (ENDPOINT.has(action)) assumed.push(`the ${action === 'model:request' ? 'model' : 'server'} is ${q.remote ? 'a remote host' : 'on loopback'}${q.remote ? '' : ' (--remote for one that is not)'}`);
  assumed.push(projectWords(request.project));
  return { request, assumed };
}

function projectWords(p: GateRequest['project']): string {
  if (!p) return 'no project';
  if (!p.trusted) return `project ${p.path}: not trusted`;
  return `project ${p.path}: trusted at ${p.level}${p.network === undefined ? '' : p.network ? ', network on' : ', network off'}`;
}

/** What the gate would decide for `q`, and why; nothing is recorded and nothing runs. */
export function explainAction(policy: Policy, q: ActionQuery): ActionExplanation {
  const { request, assumed } = requestFor(q);
  const d = explain(policy, request);
  return { action: q.action, allow: d.allow, ceiling: d.ceiling, rules: d.rules, request, assumed, policy_hash: policy.hash };
}

/** Who reads the log: the principal and project of the caller (the CLI user, a host). */
export interface Caller {
  readonly principal: GateRequest['principal'];
  readonly project: GateRequest['project'];
}

interface DecisionBody {
  decision_id: string;
  action: string;
  principal: GateRequest['principal'];
  project: string | null;
  trust?: { trusted: boolean; level: Level; network?: boolean };
  resource?: GateRequest['resource'];
  requested_level?: Level;
  allow: boolean;
  reasons: string[];
  ceiling: Level;
  policy_hash: string;
}

export interface DecisionExplanation {
  readonly decision_id: string;
  readonly seq: number;
  readonly at: string;
  readonly action: string;
  readonly allow: boolean;
  readonly ceiling: Level;
  /** The rules that decided, as recorded, with their text from the policy in force now. */
  readonly rules: readonly RuleText[];
  /** The request as the gate decided it, rebuilt from the row; null for a row recorded without its project's trust. */
  readonly request: GateRequest | null;
  readonly policy_hash: string;
  readonly current_policy_hash: string;
  readonly policy_changed: boolean;
  /** The same request decided under the policy in force now (when it could be rebuilt). */
  readonly now: { readonly allow: boolean; readonly ceiling: Level; readonly rules: readonly RuleText[] } | null;
  readonly row: ChainRow;
}

/** Rebuilds the decided request from its audit row (arguments left out: no rule reads them). */
function requestOf(b: DecisionBody): GateRequest | null {
  if (b.project !== null && !b.trust) return null;
  return {
    action: b.action,
    principal: b.principal,
    project: b.project === null ? null : { path: b.project, ...(b.trust as NonNullable<DecisionBody['trust']>) },
    ...(b.requested_level ? { requested_level: b.requested_level } : {}),
    ...(b.resource ? { resource: b.resource } : {}),
  };
}

/** A recorded decision, read through the gate, with its request decided again under the policy in force now. */
export async function explainDecision(gate: GateEnv, caller: Caller, id: string): Promise<DecisionExplanation> {
  const row = await enforce(gate, { action: 'cli:audit.read', ...caller, args: { decision_id: id.slice(0, 128) } }, () => findDecision(gate.db(), id));
  if (!row) throw new ScError('SC_AUDIT_NOT_FOUND', `no decision ${JSON.stringify(id.slice(0, 128))} in this profile's audit log; shadowcode audit list shows the recorded ones`);
  const b = row.body as DecisionBody;
  const request = requestOf(b);
  let now: DecisionExplanation['now'] = null;
  if (request) {
    try {
      const d = explain(gate.policy, request);
      now = { allow: d.allow, ceiling: d.ceiling, rules: d.rules };
    } catch {
      // A row written under another schema version: the recorded part still stands.
      now = null;
    }
  }
  return {
    decision_id: b.decision_id,
    seq: row.seq,
    at: row.at,
    action: b.action,
    allow: b.allow,
    ceiling: b.ceiling,
    rules: ruleTexts(gate.policy, b.reasons),
    request,
    policy_hash: b.policy_hash,
    current_policy_hash: gate.policy.hash,
    policy_changed: b.policy_hash !== gate.policy.hash,
    now,
    row,
  };
}
