/*
 * Why the gate decides what it decides: the request a real operation puts to it, decided
 * here without recording or running anything; and a recorded decision, read back.
 *
 *   explainAction(policy, query)
 *     ─► requestFor(query): built by the very builder the operation calls (policy/requests.ts),
 *        with stand-ins for what explain cannot know (which job, which file, which server)
 *          cli:*                     you at the command line                 cliRequest
 *          tool:, resource:, prompt: a connection with its flags; the job, task, approval or
 *                                    goal a tool names is its own, in this project  connectionRequest
 *          http:request, http:refused  the HTTP gateway                      httpRequest, httpRefusal
 *          engine:submit             whoever submits; its write flag follows the task's level,
 *                                    the job is for this project             submitRequest
 *          engine:connect            whoever opens the engine socket, no project  engineConnectRequest
 *          job:run, job:observe, file:write, background:*, runner:spawn, task:tool.*, model:request,
 *          mcp:connect, mcp:call, net:connect
 *                                    the engine, for a task at --level       jobRunRequest … netConnectRequest
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
import { grantFor, profileBoundary } from '../engine/spawn/grants.js';
import { sandboxPolicy } from '../engine/spawn/index.js';
import { ScError } from '../errors.js';
import { explain, enforce, type GateEnv, type PendingRequest, ruleTexts, type RuleText } from '../policy/gate.js';
import { holdsHome } from '../policy/home.js';
import type { Policy } from '../policy/load.js';
import { hostPortText, parseHostPort } from '../policy/net.js';
import {
  backgroundRequest, cliPrincipal, cliRequest, connectionPrincipal, connectionRequest, engineConnectRequest, fileWriteRequest, httpRefusal, httpRequest, jobObserveRequest,
  jobRunRequest, mcpCallRequest, mcpConnectRequest, modelRequest, type NetTarget, netConnectRequest, runnerSpawnRequest, type ServerRef, submitRequest, taskAsker, type TaskRef, taskToolRequest,
} from '../policy/requests.js';
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
  /** The asking user's home folders, for project.holds_home (src/policy/home.ts); by default this process's. */
  readonly homes?: readonly string[];
  /** net:connect: the host a sandboxed process asks for, whether a grant names it, and whether its name resolved inward. */
  readonly net?: NetTarget;
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

/** Stand-ins for the records a request names, where explain cannot know which one. */
const SOME = { job: '(the job)', file: '(a file)', process: '(a process)', tool: '(a tool)', model: '(a model)', server: '(a server)', host: '(a host)' } as const;
const ANOTHER_OWNER = '(another owner)';
const ANOTHER_PROJECT = '(another project)';
const ENDPOINT = new Set(['model:request', 'mcp:connect', 'mcp:call']);

type Built = GateRequest | PendingRequest;
/** Engine work for a task: each built by the builder its operation calls (policy/requests.ts). */
type Work = (task: TaskRef, trust: GateRequest['project'], q: ActionQuery) => Built;

const server = (q: ActionQuery): ServerRef => ({ id: SOME.server, hash: '0'.repeat(64), endpoint_kind: q.remote ? 'remote' : 'loopback' });
const netTarget = (q: ActionQuery): NetTarget => q.net ?? { id: `${SOME.host}:443`, host: SOME.host, port: 443, granted: false, inward: false };

const TASK_WORK: ReadonlyArray<readonly [string, Work]> = [
  ['job:run', (t, p) => jobRunRequest(t, p, SOME.job)],
  ['job:observe', (t, p) => jobObserveRequest(t, p, SOME.job)],
  ['file:write', (t, p) => fileWriteRequest(t, p, SOME.file)],
  ['background:start', (t, p) => backgroundRequest('background:start', t, p, SOME.process)],
  ['background:stop', (t, p) => backgroundRequest('background:stop', t, p, SOME.process)],
  // A build task at a writing ceiling: the runner may write.
  ['runner:spawn', (t, p) => runnerSpawnRequest(t, p, { id: '(a runner)', provider: '(its provider)', command: '(its command)' }, t.ceiling !== 'read_only')],
  ['task:tool.*', (t, p, q) => taskToolRequest(t, p, q.action.slice('task:tool.'.length))],
  ['model:request', (t, p, q) => modelRequest(t, p, { id: SOME.model, loopback: !q.remote, host: q.remote ? SOME.host : '127.0.0.1' })],
  ['mcp:connect', (t, p, q) => mcpConnectRequest(taskAsker(t, p), server(q))],
  ['mcp:call', (t, p, q) => mcpCallRequest(taskAsker(t, p), server(q), SOME.tool)],
  // The gate reads the project's trust itself when it decides a proxied connection.
  ['net:connect', (t, p, q) => ({ ...netConnectRequest(t.owner, netTarget(q)), project: p })],
];

/**
 * Tool actions whose request always names a record (server/tools/*: resource()): its kind, and
 * whether it names the record's owner (approvals and jobs do; tasks and goals are the project's).
 */
const TOOL_RECORDS: ReadonlyArray<readonly [string, { kind: string; owned: boolean }]> = [
  ['tool:shadow_approve.*', { kind: 'approval', owned: true }],
  ['tool:shadow_jobs.events', { kind: 'job', owned: true }],
  ['tool:shadow_jobs.approvals', { kind: 'job', owned: true }],
  ['tool:shadow_jobs.cancel', { kind: 'job', owned: true }],
  ['tool:shadow_review', { kind: 'task', owned: false }],
  ['tool:shadow_rollback', { kind: 'task', owned: false }],
  ['tool:shadow_goal.get', { kind: 'goal', owned: false }],
  ['tool:shadow_goal.advance', { kind: 'goal', owned: false }],
  ['tool:shadow_goal.abandon', { kind: 'goal', owned: false }],
];

const matches = (pattern: string, action: string) => (pattern.endsWith('*') ? action.startsWith(pattern.slice(0, -1)) : pattern === action);
const found = <T>(table: ReadonlyArray<readonly [string, T]>, action: string) => table.find(([p]) => matches(p, action))?.[1];

/** Who asks when `--as` is not given: you for cli: and engine:connect, the gateway for http:, else a stdio connection. */
function defaultAsker(action: string): Asker {
  if (action.startsWith('cli:') || action === 'engine:connect') return 'cli';
  return action.startsWith('http:') ? 'http' : 'stdio';
}

const ownerOf = (as: Asker, q: ActionQuery) => (as === 'cli' ? q.cliOwner : `${as}:explain`);

function principalOf(as: Asker, q: ActionQuery): GateRequest['principal'] {
  return as === 'cli' ? cliPrincipal(q.cliOwner) : connectionPrincipal(as, ownerOf(as, q), q.allowWrite === true, q.allowApprovals === true);
}

/** The record a connection's tool call names, as the tool's resource() builds it, in its owner's and project's place. */
function toolRecord(record: { kind: string; owned: boolean }, owner: string, q: ActionQuery): NonNullable<GateRequest['resource']> {
  const project = q.otherProject ? ANOTHER_PROJECT : q.project?.path;
  return { kind: record.kind, id: `(a ${record.kind})`, ...(record.owned ? { owner: q.notOwn ? ANOTHER_OWNER : owner } : {}), ...(project !== undefined ? { project } : {}) };
}

/** The request the operation behind `q.action` puts to the gate, and what it assumed. */
export function requestFor(q: ActionQuery): { request: GateRequest; assumed: string[] } {
  const { action, project } = q;
  const assumed: string[] = [];
  let built: Built;
  const work = found(TASK_WORK, action);
  if (work !== undefined && !(action === 'mcp:connect' && q.as === 'cli')) {
    // The engine acts for a task: the task's owner, its ceiling, its project (agent/, engine/, client/).
    const level = q.level ?? 'workspace';
    const task = { owner: `${q.as ?? 'stdio'}:explain`, ceiling: level, project: project?.path ?? '(no project)' };
    built = work(task, project, q);
    // A proxied connection is asked for the process that makes it, at no level of its own.
    if (action === 'net:connect') assumed.push('the engine asks, for a connection a sandboxed command of a task makes through the proxy');
    else assumed.push(`the engine asks, for a task at level ${level}${q.level ? '' : ' (--level to change)'}`);
    if (action === 'net:connect') {
      const t = netTarget(q);
      assumed.push(q.net ? `${t.id}: ${t.granted ? 'a sandbox grant names it' : 'no sandbox grant names it'}${t.granted ? (t.inward ? ', and its name resolves to a loopback or private address its grant does not name' : ', and it resolves to a public address (a name that resolves inward needs its grant with --private)') : ''}` : 'a host no sandbox grant names (--host HOST[:PORT] to ask about one)');
    }
  } else if (action === 'engine:submit') {
    // Whoever submits; the write flag follows the task's level, not the connection's flags (engine-submit.ts admitJob).
    const as = q.as ?? 'stdio';
    const level = q.level ?? 'workspace';
    const jobProject = q.otherProject ? ANOTHER_PROJECT : (project?.path ?? '(no project)');
    built = submitRequest({ kind: as, owner: ownerOf(as, q) }, project, level, jobProject, 'agent');
    assumed.push(`${as === 'cli' ? 'you at the command line submit' : `a ${as} connection submits`} a job at level ${level}${q.level ? '' : ' (--level to change)'}, for ${q.otherProject ? 'another project' : 'this project'}`);
  } else if (action === 'engine:connect') {
    const as = q.as ?? 'cli';
    built = engineConnectRequest({ kind: as, owner: ownerOf(as, q) }, '(the engine socket)', 'control');
    assumed.push(`${as === 'cli' ? 'the command line' : `a ${as} connection`} opens a socket to the profile's shared engine`);
  } else if (action === 'mcp:connect') {
    // Your review of a server's tools (mcp enable, mcp tools --refresh: client/review.ts).
    built = mcpConnectRequest({ principal: cliPrincipal(q.cliOwner), project }, server(q));
    assumed.push('you at the command line read the server\'s tool catalog for review');
  } else {
    const as = q.as ?? defaultAsker(action);
    const principal = principalOf(as, q);
    const level = q.level ?? (action === 'tool:shadow_run' ? 'read_only' : undefined);
    const record = action.startsWith('tool:') ? found(TOOL_RECORDS, action) : undefined;
    const resource = record || q.notOwn || q.otherProject ? toolRecord(record ?? { kind: 'self', owned: true }, principal.owner, q) : undefined;
    const extra = { ...(level ? { requested_level: level } : {}), ...(resource ? { resource } : {}) };
    if (as === 'cli') built = cliRequest(q.cliOwner, project, action, extra);
    else if (action === 'http:request') built = httpRequest(principal, '(a method)');
    else if (action === 'http:refused') built = httpRefusal(principal, { status: 0, reason: '(a guard)', method: 'POST' });
    else built = connectionRequest(principal, action, extra);
    if (as === 'cli') assumed.push('you at the command line ask');
    else assumed.push(`${as === 'http' ? 'the HTTP gateway' : 'a stdio connection'} asks, ${principal.allow_write ? 'with --allow-write' : 'without --allow-write'}${principal.allow_approvals ? ' and --allow-approvals' : ''}`);
    if (level) assumed.push(`at level ${level}${q.level ? '' : ' (permission_level unset; --level to change)'}`);
    if (record) assumed.push(`the ${record.kind} it names ${record.owned ? `belongs to ${q.notOwn ? 'another owner' : 'that connection'}, ` : 'is '}in ${q.otherProject ? 'another project' : 'this project'}`);
  }
  // A connection's request leaves the project to the gate, which fills it in from the store as it decides.
  const request: GateRequest = { ...built, project: built.project === undefined ? project : built.project };
  if (request.action !== action) throw new ScError('SC_INTERNAL', `policy explain built ${request.action} for ${action}`);
  if (ENDPOINT.has(action)) assumed.push(`the ${action === 'model:request' ? 'model' : 'server'} is ${q.remote ? 'a remote host' : 'on loopback'}${q.remote ? '' : ' (--remote for one that is not)'}`);
  assumed.push(projectWords(request.project));
  return { request, assumed };
}

/**
 * net:connect to `text` (HOST or HOST:PORT, port 443 when not given) from this project's sandbox:
 * whether a grant names it, found as the proxy finds it (engine/spawn/grants.ts grantFor). Its
 * name is not looked up here; one the grant does not name as an address is assumed public.
 */
export function netQuery(policy: Policy, profileDir: string, project: string | null, home: string | undefined, text: string): NetTarget {
  const h = parseHostPort(text);
  if (!h) throw new ScError('SC_BAD_VALUE', `--host ${JSON.stringify(text.slice(0, 256))} is not HOST or HOST:PORT`);
  const target = { host: h.host, port: h.port ?? 443 };
  const grant = grantFor(profileBoundary(profileDir, project, sandboxPolicy(policy), home).hosts, target);
  return { id: hostPortText(target), ...target, granted: grant !== undefined, inward: false };
}

function projectWords(p: GateRequest['project']): string {
  if (!p) return 'no project';
  if (!p.trusted) return `project ${p.path}: not trusted`;
  return `project ${p.path}: trusted at ${p.level}${p.network === undefined ? '' : p.network ? ', network on' : ', network off'}`;
}

/** What the gate would decide for `q`, and why; nothing is recorded and nothing runs. */
export function explainAction(policy: Policy, q: ActionQuery): ActionExplanation {
  const { request: asked, assumed } = requestFor(q);
  const d = explain(policy, asked, q.homes);
  // As the gate decided it: with what the gate adds (project.holds_home).
  const request = asked.project ? { ...asked, project: { ...asked.project, holds_home: holdsHome(asked.project.path, q.homes) } } : asked;
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
      const d = explain(gate.policy, request, gate.homes);
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
