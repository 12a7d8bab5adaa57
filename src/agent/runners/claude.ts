/*
 * Claude Code as a task runner (`claude -p`, stream-json both ways).
 *
 *   claude [fixed args] -p --output-format stream-json --input-format stream-json --verbose
 *          --permission-prompt-tool stdio --strict-mcp-config --mcp-config <temp 0600>
 *          --setting-sources user --permission-mode plan|default --no-session-persistence
 *   stdin:  {type:user, message} with the prompt; control_response for each approval
 *   stdout: system/init, assistant (text, tool_use), user (tool_result), control_request
 *           can_use_tool ─► ctx.requestApproval(exact tool input) ─► allow | deny, result
 *
 * A Bash command's approval carries what a native command's does (command-context.ts):
 * the files the CLI changed so far, from its snapshot, and which of them the command runs.
 *
 * MCP: the temp config lists only our relay (relay-host.ts), once per shared server; a
 * relayed tool's can_use_tool is allowed here because the relay itself waits for the
 * exact approval of each call. Isolation: only that config (--strict-mcp-config), and no
 * project or local settings (their hooks would run even in an untrusted folder). No
 * --allowedTools: an allow rule would answer before the prompt and our approval would
 * never be asked. A read-only task runs in plan mode and every prompt is denied here.
 *
 * A write is judged where it would really land: a path through a link that leaves the
 * project is refused unasked, and so is a protected path (policy/protected-paths.json);
 * otherwise the approval names the real target when a link leads elsewhere inside.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { ScError } from '../../errors.js';
import { realForm } from '../../policy/protected-paths.js';
import type { ApprovalKind } from '../types.js';
import { type Driven, type Run, stderrTail } from './run.js';

function inside(project: string, abs: string): string | null {
  const rel = relative(project, abs);
  return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? null : rel;
}

/**
 * A path as the project sees it, or null when it leaves the project, as written or
 * through a link on its way (such a write is refused unasked).
 */
export function projectRelative(project: string, path: string): string | null {
  const abs = resolve(project, path);
  const rel = inside(project, abs);
  return rel !== null && inside(project, realForm(abs)) !== null ? rel : null;
}

/** Where a write to `path` really lands, project-relative (after every existing link), or null outside. */
export function realTarget(project: string, path: string): string | null {
  return inside(project, realForm(resolve(project, path)));
}

/** What the approval row records for one tool use: the kind and the exact action. */
export function claudeApproval(project: string, tool: string, input: Record<string, unknown>): { kind: ApprovalKind; action: Record<string, unknown> } {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(tool);
  if (mcp) return { kind: 'mcp_call', action: { server: mcp[1], tool: mcp[2], arguments: input } };
  if (tool === 'Bash' && typeof input.command === 'string') return { kind: 'command', action: { argv: ['sh', '-c', input.command], cwd: project, tool, input } };
  const path = input.file_path ?? input.notebook_path;
  if (['Edit', 'MultiEdit', 'Write', 'NotebookEdit'].includes(tool)) {
    const rel = typeof path === 'string' ? projectRelative(project, path) : null;
    const target = typeof path === 'string' && rel !== null ? realTarget(project, path) : null;
    return { kind: 'write', action: { path: rel, ...(target !== null && target !== rel ? { target } : {}), tool, input } };
  }
  return { kind: 'command', action: { tool, input, cwd: project } };
}

interface Message {
  type?: string;
  subtype?: string;
  request_id?: string;
  request?: { subtype?: string; tool_name?: string; input?: Record<string, unknown>; tool_use_id?: string };
  message?: { content?: unknown };
  result?: string;
  is_error?: boolean;
  num_turns?: number;
  total_cost_usd?: number;
  usage?: { input_tokens?: number; output_tokens?: number };
  session_id?: string;
  model?: string;
  permissionMode?: string;
  mcp_servers?: unknown;
  errors?: unknown;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (typeof c === 'object' && c && 'text' in c ? String((c as { text: unknown }).text) : JSON.stringify(c))).join('\n');
  return JSON.stringify(content ?? '');
}

/**
 * The `--mcp-config` content: our relay under each shared server's name, nothing else.
 * Claude Code expands `${…}` in command, args and env, so a value holding one is refused.
 */
export function claudeMcpConfig(run: Pick<Run, 'relay' | 'relayCallMs'>): { mcpServers: Record<string, unknown> } {
  const mcpServers: Record<string, unknown> = {};
  for (const r of run.relay) {
    const entry = { type: 'stdio', command: r.command, args: r.args, env: r.env, timeout: run.relayCallMs };
    if (JSON.stringify(entry).includes('${')) throw new ScError('SC_RUNNER_FAILED', `the relay entry for ${r.name} holds "\${", which Claude Code would expand; move shadowcode or TMPDIR to a path without it`);
    mcpServers[r.name] = entry;
  }
  return { mcpServers };
}

export async function driveClaude(run: Run): Promise<Driven> {
  const { ctx, readOnly } = run;
  const config = run.tempFile('mcp.json', JSON.stringify(claudeMcpConfig(run)));
  // The relay asks the user itself, with the exact call; a second prompt here would ask twice.
  const relayed = (tool: string) => run.relay.some((r) => tool.startsWith(`mcp__${r.name}__`));
  const args = [
    '-p', '--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose',
    '--permission-prompt-tool', 'stdio', '--strict-mcp-config', '--mcp-config', config,
    '--setting-sources', 'user', '--permission-mode', readOnly ? 'plan' : 'default', '--no-session-persistence',
  ];
  let result: Message | null = null;
  let broken: string | null = null;
  const answer = (requestId: string, response: Record<string, unknown>) => proc.send({ type: 'control_response', response: { subtype: 'success', request_id: requestId, response } });
  const approve = async (m: Message) => {
    const r = m.request ?? {};
    const input = r.input ?? {};
    const tool = String(r.tool_name ?? '');
    if (readOnly) return answer(m.request_id as string, { behavior: 'deny', message: 'This is a read-only task: no edits, commands or external tool calls.' });
    if (relayed(tool)) return answer(m.request_id as string, { behavior: 'allow', updatedInput: input });
    const { kind, action: asked } = claudeApproval(ctx.project, tool, input);
    // A Bash command is shown as a native run_command is: with the files the CLI changed so far and which of them it runs.
    const action = kind === 'command' && Array.isArray(asked.argv) ? { ...run.commandApproval(asked.argv as string[], ctx.project), tool, input, ...(proc.sandbox === 'none' ? { unsandboxed: true } : {}) } : asked;
    if (kind === 'write' && action.path === null) return answer(m.request_id as string, { behavior: 'deny', message: 'shadowcode allows edits only inside the project (a link on the way that leaves it counts as outside).' });
    if (kind === 'write') {
      const v = run.protect(String(action.target ?? action.path));
      if (v.effect === 'refuse') return answer(m.request_id as string, { behavior: 'deny', message: `shadowcode never lets a task write ${v.matched}: ${v.description}` });
      if (v.effect === 'approve') Object.assign(action, { rule: v.rule, reason: v.description });
    }
    const outcome = await ctx.requestApproval(kind, action);
    if (outcome === 'approved') answer(m.request_id as string, { behavior: 'allow', updatedInput: input });
    else answer(m.request_id as string, { behavior: 'deny', message: outcome === 'denied' ? 'The user denied this action in shadowcode.' : 'The task was cancelled.', ...(outcome === 'cancelled' ? { interrupt: true } : {}) });
  };
  const onLine = (line: string) => {
    let m: Message;
    try {
      m = JSON.parse(line) as Message;
    } catch {
      run.emit('runner.output', { text: line });
      return;
    }
    if (m.type === 'system' && m.subtype === 'init') run.emit('runner.session', { session_id: m.session_id ?? null, model: m.model ?? null, permission_mode: m.permissionMode ?? null, mcp_servers: m.mcp_servers ?? [] });
    else if (m.type === 'assistant' && Array.isArray(m.message?.content)) {
      const blocks = m.message.content as Array<Record<string, unknown>>;
      const uses = blocks.filter((c) => c.type === 'tool_use').map((c) => ({ id: String(c.id), name: String(c.name), input: c.input ?? {} }));
      const text = blocks.filter((c) => c.type === 'text' && typeof c.text === 'string').map((c) => c.text as string).join('');
      const u = (m.message as { usage?: { input_tokens?: number; output_tokens?: number } }).usage;
      run.events.say(text, u ? { input_tokens: u.input_tokens ?? 0, output_tokens: u.output_tokens ?? 0 } : null, uses);
      for (const c of uses) run.events.toolCall(c.id, c.name, c.input);
    } else if (m.type === 'user' && Array.isArray(m.message?.content)) {
      for (const c of m.message.content as Array<Record<string, unknown>>) {
        if (c.type === 'tool_result') run.events.toolResult(String(c.tool_use_id), c.is_error === true, resultText(c.content));
      }
    } else if (m.type === 'control_request' && m.request_id) {
      if (m.request?.subtype === 'can_use_tool') void approve(m).catch((err: unknown) => answer(m.request_id as string, { behavior: 'deny', message: `shadowcode could not record the approval: ${(err as Error).message}` }));
      else proc.send({ type: 'control_response', response: { subtype: 'error', request_id: m.request_id, error: `shadowcode does not handle ${m.request?.subtype ?? 'this request'}` } });
    } else if (m.type === 'result') {
      result = m;
      const usage = { input_tokens: m.usage?.input_tokens ?? 0, output_tokens: m.usage?.output_tokens ?? 0 };
      run.emit('usage', { ...usage, ...(typeof m.total_cost_usd === 'number' ? { cost_usd: m.total_cost_usd } : {}) });
      // One prompt per task: end of input lets the CLI exit; the group is stopped if it lingers.
      proc.endInput();
      setTimeout(() => proc.cancel(), run.limits.kill_grace_ms).unref();
    }
  };
  const proc = run.launch(args, ['HOME', 'CLAUDE_CONFIG_DIR'], onLine);
  proc.send({ type: 'user', message: { role: 'user', content: ctx.prompt }, parent_tool_use_id: null, session_id: '' });
  const exit = await proc.done;
  if (exit.overflow) broken = exit.overflow;
  const r = result as Message | null;
  const usage = r?.usage ? { input_tokens: r.usage.input_tokens ?? 0, output_tokens: r.usage.output_tokens ?? 0 } : undefined;
  run.emit('runner.exited', { code: exit.code, signal: exit.signal, stopped: exit.stopped });
  if (broken) return { ok: false, summary: null, failure: broken, ...(usage ? { usage } : {}) };
  if (!r) return { ok: false, summary: null, failure: `claude ended without a result (exit ${exit.code ?? exit.signal ?? exit.error}): ${stderrTail(exit.stderr) || 'no stderr'}` };
  if (r.is_error || (r.subtype && r.subtype !== 'success')) return { ok: false, summary: r.result ?? null, failure: `claude reported ${r.subtype ?? 'an error'}: ${JSON.stringify(r.errors ?? r.result ?? '').slice(0, 300)}`, ...(usage ? { usage } : {}) };
  return { ok: true, summary: r.result ?? null, ...(usage ? { usage } : {}), ...(r.num_turns !== undefined ? { steps: r.num_turns } : {}) };
}
