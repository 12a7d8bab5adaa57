/*
 * How each principal asks the gate: one builder per kind of operation. The operation calls it
 * to be decided, and `policy explain` (ops/explain.ts) calls the very same one to say what
 * would be decided, so a change to how the gate is asked changes the explanation with it.
 *
 *   trustOf(db, path)                      the project as the gate reads it: trust, level, network
 *                                          (a request's project names the project; the gate reads its
 *                                          trust again inside the decision's transaction and decides on that)
 *
 *   you at the command line                cliRequest                     (cli/context.ts)
 *   a connection: stdio, HTTP gateway      connectionPrincipal, connectionRequest  (server/connection.ts)
 *     the HTTP request around its call     httpRequest, httpRefusal       (server/http.ts)
 *   whoever submits a job or opens the     submitRequest  engine:submit   (engine/engine-submit.ts)
 *   engine socket                          engineConnectRequest           (engine/daemon/remote.ts)
 *   the engine, for a task at its ceiling  taskPrincipal, and per operation:
 *     job:run, job:observe                 jobRunRequest, jobObserveRequest   (engine/jobs.ts, agent/tools/run-command.ts, engine/change-watch.ts)
 *     file:write, task:tool.NAME           fileWriteRequest, taskToolRequest  (agent/tools/change.ts, agent/loop.ts)
 *     background:start|stop                backgroundRequest              (engine/engine-background.ts)
 *     model:request, runner:spawn          modelRequest, runnerSpawnRequest   (agent/loop.ts, agent/runners/run.ts)
 *   outbound MCP: for a task (taskAsker),  mcpConnectRequest, mcpCallRequest  (client/open.ts, client/task-tools.ts,
 *     or your review at the command line                                     client/catalog-check.ts, client/review.ts)
 *   a sandboxed process's connection       netConnectRequest  net:connect (engine/spawn/net-proxy.ts)
 *
 * Each builder fixes its action and the shape of the record it names; callers add only what
 * they know (ids, arguments for the audit row). No rule reads the arguments. A principal is
 * written nowhere else (test/architecture.test.ts holds to that).
 */
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { Db } from '../store/db.js';
import { getProject } from '../store/projects.js';
import type { Level } from '../ticket.js';
import type { PendingRequest } from './gate.js';

export type Principal = GateRequest['principal'];
export type Trust = NonNullable<GateRequest['project']>;
export type Resource = NonNullable<GateRequest['resource']>;
type Args = Record<string, unknown>;
type Extra = Partial<Pick<GateRequest, 'resource' | 'args' | 'requested_level'>>;

const withArgs = (args: Args | undefined) => (args ? { args } : {});

/** The project's trust as stored now, as every request carries it. */
export function trustOf(db: Db, path: string): Trust {
  const p = getProject(db, path);
  return { path, trusted: p.trusted, level: p.level, network: p.network };
}

// ─── you at the command line ──────────────────────────────────────────────────────────────

/** The person at the terminal is the authority over their own profile: both flags, always. */
export function cliPrincipal(owner: string): Principal {
  return { kind: 'cli', owner, allow_write: true, allow_approvals: true };
}

export function cliRequest(owner: string, project: Trust | null, action: string, extra: Partial<Omit<GateRequest, 'action' | 'principal' | 'project'>> = {}): GateRequest {
  return { action, principal: cliPrincipal(owner), project, ...extra };
}

// ─── a connected client: stdio connection or HTTP gateway ─────────────────────────────────

export function connectionPrincipal(transport: 'stdio' | 'http', owner: string, allowWrite: boolean, allowApprovals: boolean): Principal {
  return { kind: transport, owner, allow_write: allowWrite, allow_approvals: allowApprovals };
}

/** A tool call, resource read or prompt; the gate fills in the project's trust when it decides. */
export function connectionRequest(principal: Principal, action: string, extra: Extra = {}): PendingRequest {
  return { action, principal, ...extra };
}

/** The HTTP request that carries a call, decided with it. */
export function httpRequest(principal: Principal, mcpMethod: string): PendingRequest {
  return connectionRequest(principal, 'http:request', { args: { method: 'POST', mcp_method: mcpMethod.slice(0, 128) } });
}

/** A request the gateway's guards refused, recorded as a denied decision (never its credential). */
export function httpRefusal(principal: Principal, refused: { status: number; reason: string; method: string }): PendingRequest {
  return connectionRequest(principal, 'http:refused', { args: refused });
}

// ─── whoever submits to the engine or opens its socket ────────────────────────────────────

export interface Asker {
  readonly kind: 'cli' | 'stdio' | 'http';
  readonly owner: string;
}

/** Whoever submits a job, as its requests name them: the write flag follows the job's level, not the submitter's flags. */
export function submitterPrincipal(kind: Principal['kind'], owner: string, level: Level): Principal {
  return { kind, owner, allow_write: level !== 'read_only', allow_approvals: false };
}

/** engine:submit: `trust` is the project the submitter is confined to, `jobProject` where the job runs. */
export function submitRequest(who: Asker, trust: GateRequest['project'], level: Level, jobProject: string, jobKind: string): GateRequest {
  return {
    action: 'engine:submit',
    principal: submitterPrincipal(who.kind, who.owner, level),
    project: trust,
    requested_level: level,
    resource: { kind: 'job', owner: who.owner, project: jobProject },
    args: { kind: jobKind, project: jobProject },
  };
}

export function engineConnectRequest(who: Asker, socket: string, role: string): GateRequest {
  return { action: 'engine:connect', principal: { kind: who.kind, owner: who.owner, allow_write: false, allow_approvals: false }, project: null, resource: { kind: 'engine', id: socket }, args: { role } };
}

// ─── the engine, acting for a task ────────────────────────────────────────────────────────

/** The task the engine acts for: its owner, its ceiling, its project. */
export interface TaskRef {
  readonly owner: string;
  readonly ceiling: Level;
  readonly project: string;
}

/** The engine for a task's owner; it may write when the task's ceiling allows it. */
export function taskPrincipal(task: Pick<TaskRef, 'owner' | 'ceiling'>, write = task.ceiling !== 'read_only'): Principal {
  return { kind: 'engine', owner: task.owner, allow_write: write, allow_approvals: false };
}

function taskRequest(task: TaskRef, trust: GateRequest['project'], action: string, resource: Resource, args?: Args, write?: boolean): GateRequest {
  return { action, principal: taskPrincipal(task, write), project: trust, requested_level: task.ceiling, resource, ...withArgs(args) };
}

const taskRecord = (task: TaskRef, kind: string, id: string): Resource => ({ kind, id, owner: task.owner, project: task.project });

/** A command run for the job `jobId` (a test job, or a task's run_command). */
export function jobRunRequest(task: TaskRef, trust: GateRequest['project'], jobId: string, args?: Args): GateRequest {
  return taskRequest(task, trust, 'job:run', taskRecord(task, 'job', jobId), args);
}

/** Recording what changed in the project while the job `jobId` ran. */
export function jobObserveRequest(task: TaskRef, trust: GateRequest['project'], jobId: string, args?: Args): GateRequest {
  return taskRequest(task, trust, 'job:observe', taskRecord(task, 'job', jobId), args);
}

export function fileWriteRequest(task: TaskRef, trust: GateRequest['project'], path: string, args?: Args): GateRequest {
  return taskRequest(task, trust, 'file:write', taskRecord(task, 'file', path.slice(0, 512)), args);
}

/** One call of a native task tool (task:tool.NAME). */
export function taskToolRequest(task: TaskRef, trust: GateRequest['project'], tool: string, args?: Args): GateRequest {
  return taskRequest(task, trust, `task:tool.${tool}`, taskRecord(task, 'tool', tool), args);
}

export function backgroundRequest(action: 'background:start' | 'background:stop', task: TaskRef, trust: GateRequest['project'], id: string, args?: Args): GateRequest {
  return taskRequest(task, trust, action, taskRecord(task, 'background', id), args);
}

/** One turn of a configured model; a model that is not on loopback needs the project's network. */
export function modelRequest(task: TaskRef, trust: GateRequest['project'], model: { id: string; loopback: boolean; host: string }, args?: Args): GateRequest {
  const resource: Resource = { ...taskRecord(task, 'model', model.id), model: model.id, endpoint_kind: model.loopback ? 'loopback' : 'remote', host: model.host.slice(0, 256) };
  return taskRequest(task, trust, 'model:request', resource, args);
}

/** A coding CLI started for the task; it may write only in build mode at a writing ceiling (`write`). */
export function runnerSpawnRequest(task: TaskRef, trust: GateRequest['project'], runner: { id: string; provider: string; command: string }, write: boolean, args?: Args): GateRequest {
  return taskRequest(task, trust, 'runner:spawn', { kind: 'runner', id: runner.id, provider: runner.provider, command: runner.command, project: task.project }, args, write);
}

// ─── outbound MCP: an external server, for a task or for your review ──────────────────────

/** Who connects to an external server: the engine for a task, or you at the command line (a review). */
export type McpAsker = Pick<GateRequest, 'principal' | 'project'> & Partial<Pick<GateRequest, 'requested_level'>>;

export function taskAsker(task: TaskRef, trust: GateRequest['project']): McpAsker {
  return { principal: taskPrincipal(task), project: trust, requested_level: task.ceiling };
}

/** An external server as a request names it: its definition id and hash, and how far away it is. */
export interface ServerRef {
  readonly id: string;
  readonly hash: string;
  readonly endpoint_kind: 'loopback' | 'remote';
}

export function mcpConnectRequest(asker: McpAsker, server: ServerRef, args?: Args): GateRequest {
  return { ...asker, action: 'mcp:connect', resource: { kind: 'mcp_server', id: server.id, hash: server.hash, endpoint_kind: server.endpoint_kind }, ...withArgs(args) };
}

export function mcpCallRequest(asker: McpAsker, server: ServerRef, tool: string, args?: Args): GateRequest {
  return { ...asker, action: 'mcp:call', resource: { kind: 'mcp_tool', id: `${server.id}#${tool}`.slice(0, 512), hash: server.hash, endpoint_kind: server.endpoint_kind }, ...withArgs(args) };
}

// ─── a sandboxed process reaching a host through the proxy ────────────────────────────────

export interface NetTarget {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  /** A grant names this host (and port). */
  readonly granted: boolean;
  /** The name resolved to a loopback, private or link-local address its grant does not name. */
  readonly inward: boolean;
}

/** One connection, for the owner of the start it belongs to; the gate reads the project's trust when it decides. */
export function netConnectRequest(owner: string, target: NetTarget, args?: Args): PendingRequest {
  return {
    action: 'net:connect',
    principal: { kind: 'engine', owner, allow_write: false, allow_approvals: false },
    resource: { kind: 'net_host', id: target.id, host: target.host, port: target.port, granted: target.granted, private_address: target.inward },
    ...withArgs(args),
  };
}
