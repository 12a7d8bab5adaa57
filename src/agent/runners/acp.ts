/*
 * An ACP agent as a task runner: JSON-RPC 2.0 over the agent's stdio, one JSON
 * message per line (Agent Client Protocol v1).
 *
 *   initialize {protocolVersion 1, no fs or terminal capability}
 *   session/new {cwd: project, mcpServers: our relay, once per shared server (relay-host.ts)}
 *   session/prompt {prompt: [text]} ─► session/update notifications ─► job events
 *       agent ─► session/request_permission ─► ctx.requestApproval ─► allow_once | reject_once
 *   ctx.signal ─► session/cancel, pending permissions answered `cancelled`, then the group stopped
 *
 * We offer no client capabilities, so the agent edits and runs commands by its own
 * means, under its own rules; what it changed is found by the snapshot. A read-only
 * task rejects every permission request without asking. Only "once" options are
 * chosen: an "always" answer would let later calls skip our approval.
 */
import { VERSION } from '../../version.js';
import type { ApprovalKind } from '../types.js';
import { projectRelative } from './claude.js';
import { type Driven, type Run, stderrTail } from './run.js';

interface Rpc {
  jsonrpc?: string;
  id?: number | string | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code?: number; message?: string };
}

interface ToolCall {
  toolCallId?: string;
  title?: string;
  name?: string | null;
  kind?: string;
  status?: string;
  rawInput?: unknown;
  rawOutput?: unknown;
  content?: Array<{ type?: string; content?: { type?: string; text?: string }; path?: string }>;
  locations?: Array<{ path?: string }>;
}

interface Option {
  optionId: string;
  kind: string;
}

/** What the approval row records for one ACP permission request. */
export function acpApproval(project: string, call: ToolCall): { kind: ApprovalKind; action: Record<string, unknown> } {
  const base = { tool: call.name ?? call.title ?? null, title: call.title ?? null, tool_kind: call.kind ?? 'other', input: call.rawInput ?? null, tool_call_id: call.toolCallId ?? null };
  if (['edit', 'delete', 'move'].includes(call.kind ?? '')) {
    const paths = (call.locations ?? []).map((l) => (typeof l.path === 'string' ? projectRelative(project, l.path) : null));
    return { kind: 'write', action: { path: paths[0] ?? null, paths, ...base } };
  }
  return { kind: 'command', action: { cwd: project, ...base } };
}

function text(call: ToolCall): string {
  return (call.content ?? []).map((c) => (c.type === 'content' ? (c.content?.text ?? '') : c.type === 'diff' ? `diff ${c.path ?? ''}` : '')).filter(Boolean).join('\n');
}

export async function driveAcp(run: Run): Promise<Driven> {
  const { ctx, readOnly, limits } = run;
  let nextId = 1;
  const waiting = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  const permissions = new Map<number | string, (outcome: Record<string, unknown>) => void>();
  let said = '';
  let unsaid = '';
  const flush = (calls: Array<{ id: string; name: string }>) => {
    if (unsaid || calls.length) run.events.say(unsaid, null, calls);
    unsaid = '';
  };
  let steps = 0;
  const reply = (id: number | string, result: Record<string, unknown>) => proc.send({ jsonrpc: '2.0', id, result });

  const request = (method: string, params: Record<string, unknown>, deadlineMs: number | null): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const timer = deadlineMs === null ? null : setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`the agent did not answer ${method} within ${deadlineMs} ms`));
      }, deadlineMs);
      waiting.set(id, {
        resolve: (r) => (timer && clearTimeout(timer), resolve(r)),
        reject: (e) => (timer && clearTimeout(timer), reject(e)),
      });
      proc.send({ jsonrpc: '2.0', id, method, params });
    });

  const permission = async (id: number | string, params: Record<string, unknown>) => {
    const call = (params.toolCall ?? {}) as ToolCall;
    const options = (Array.isArray(params.options) ? params.options : []) as Option[];
    const pick = (kind: string) => options.find((o) => o.kind === kind)?.optionId;
    const reject = () => {
      const optionId = pick('reject_once') ?? pick('reject_always');
      return optionId ? { outcome: { outcome: 'selected', optionId } } : { outcome: { outcome: 'cancelled' } };
    };
    let settled = false;
    const answer = (r: Record<string, unknown>) => {
      if (settled) return;
      settled = true;
      permissions.delete(id);
      reply(id, r);
    };
    permissions.set(id, answer);
    if (readOnly) return answer(reject());
    const { kind, action } = acpApproval(ctx.project, call);
    if (kind === 'write' && (action.paths as unknown[]).some((p) => p === null)) return answer(reject());
    // A protected path (git metadata, host configs, the profile) is refused unasked.
    if (kind === 'write' && (action.paths as string[]).some((p) => run.protect(p).effect === 'refuse')) return answer(reject());
    // A command the agent runs inside its sandbox runs with that sandbox's grants: the approval names them.
    const outcome = await ctx.requestApproval(kind, kind === 'command' && run.sandboxGrants.length ? { ...action, grants: run.sandboxGrants } : action);
    if (outcome === 'approved' && pick('allow_once')) answer({ outcome: { outcome: 'selected', optionId: pick('allow_once') } });
    else if (outcome === 'cancelled') answer({ outcome: { outcome: 'cancelled' } });
    else answer(reject());
  };

  const update = (u: Record<string, unknown>) => {
    const kind = u.sessionUpdate;
    const content = u.content as { type?: string; text?: string } | undefined;
    if (kind === 'agent_message_chunk' && content?.type === 'text' && typeof content.text === 'string') {
      said += content.text;
      unsaid += content.text;
    } else if (kind === 'tool_call') {
      steps++;
      const c = u as ToolCall;
      const id = String(c.toolCallId ?? '');
      const name = c.name ?? c.title ?? 'tool';
      flush([{ id, name }]);
      run.events.toolCall(id, name, c.rawInput ?? {});
    } else if (kind === 'tool_call_update') {
      const c = u as ToolCall;
      if (c.status === 'completed' || c.status === 'failed') run.events.toolResult(String(c.toolCallId ?? ''), c.status === 'failed', text(c) || JSON.stringify(c.rawOutput ?? ''));
    } else if (kind === 'usage_update') {
      run.emit('usage', { context_used: u.used ?? null, context_size: u.size ?? null, ...(u.cost ? { cost: u.cost } : {}) });
    }
  };

  const onLine = (line: string) => {
    let m: Rpc;
    try {
      m = JSON.parse(line) as Rpc;
    } catch {
      run.emit('runner.output', { text: line });
      return;
    }
    if (m.method && m.id !== undefined && m.id !== null) {
      if (m.method === 'session/request_permission') void permission(m.id, m.params ?? {}).catch(() => permissions.get(m.id as number)?.({ outcome: { outcome: 'cancelled' } }));
      else proc.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `shadowcode does not offer ${m.method}` } });
    } else if (m.method === 'session/update') update((m.params?.update ?? {}) as Record<string, unknown>);
    else if (!m.method && typeof m.id === 'number') {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) w?.reject(new Error(`${m.error.message ?? 'error'} (${m.error.code ?? '?'})`));
      else w?.resolve(m.result ?? {});
    }
  };

  // On cancel the agent is told (session/cancel) and ends its turn; the group is stopped then, or after the grace.
  const proc = run.launch([], ['HOME'], onLine, 'grace');
  void proc.done.then(() => {
    for (const w of waiting.values()) w.reject(new Error('the agent exited'));
    waiting.clear();
  });
  let sessionId: string | null = null;
  const onAbort = () => {
    if (sessionId) proc.send({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } });
    for (const answer of [...permissions.values()]) answer({ outcome: { outcome: 'cancelled' } });
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  let driven: Driven;
  try {
    const init = await request('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }, clientInfo: { name: 'shadowcode', version: VERSION } }, limits.acp_request_deadline_ms);
    // Our relay is a stdio server, which every ACP agent supports; the granted servers themselves are never named.
    const mcpServers = run.relay.map((r) => ({ name: r.name, command: r.command, args: r.args, env: Object.entries(r.env).map(([name, value]) => ({ name, value })) }));
    const session = await request('session/new', { cwd: ctx.project, mcpServers }, limits.acp_request_deadline_ms);
    sessionId = String(session.sessionId ?? '');
    run.emit('runner.session', { session_id: sessionId, agent: init.agentInfo ?? null, protocol_version: init.protocolVersion ?? null });
    const r = await request('session/prompt', { sessionId, prompt: [{ type: 'text', text: ctx.prompt }] }, null);
    flush([]);
    const stop = String(r.stopReason ?? '');
    run.emit('runner.stop', { stop_reason: stop });
    driven = stop === 'end_turn' || stop === 'cancelled' ? { ok: true, summary: said || null, steps } : { ok: false, summary: said || null, failure: `the agent stopped: ${stop}`, steps };
  } catch (err) {
    driven = { ok: false, summary: said || null, failure: (err as Error).message };
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    proc.endInput();
    setTimeout(() => proc.cancel(), limits.kill_grace_ms).unref();
    if (ctx.signal.aborted) proc.cancel();
  }
  const exit = await proc.done;
  run.emit('runner.exited', { code: exit.code, signal: exit.signal, stopped: exit.stopped });
  if (exit.overflow) return { ok: false, summary: null, failure: exit.overflow };
  if (!driven.ok && exit.stderr) return { ...driven, failure: `${driven.failure}: ${stderrTail(exit.stderr)}` };
  return driven;
}
