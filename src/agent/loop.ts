/*
 * The native task loop: one conversation with a model, inside a job.
 *
 *   prompt ─► fit the conversation to the model's context (trim oldest tool outputs, or fail)
 *   ─► gate 'model:request' ─► provider.turn(ticket, …) ─► Turn
 *   ─► tool calls accumulated? (whatever the stop reason said)
 *        none ─► the answer is the summary; done
 *        stop 'length' ─► a failed turn: nothing runs, each call gets a tool error
 *        each call in order: parse JSON (never run unparsable) ─► schema ─► gate 'task:tool.<name>'
 *          ─► native tool | the task's extra tool source ─► result (capped, scrubbed) to the model
 *          (at most agent.tool_calls_per_answer calls; the next is answered SC_TOOL_CALL_LIMIT and the
 *          rest are left out of the conversation; between calls the event loop runs, so a cancel
 *          or a ping is answered at once)
 *        a refused or failed call keeps its refusal but, past agent.refused_argument_chars,
 *          not its arguments: a note of their size replaces them, so the next request still fits
 *        finish ─► its summary; done
 *   ─► next step, within agent.max_steps, wall_time_ms and total_tokens
 *
 * Every request, call, result, approval and checkpoint becomes a job event
 * through ctx.emit, which redacts known secret values before storing. Tool
 * results are scrubbed of them before the model sees them too.
 */
import { ScError } from '../errors.js';
import type { GateEnv } from '../policy/gate.js';
import { enforce } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import { scrubText } from '../policy/redact.js';
import { modelRequest, taskToolRequest, trustOf } from '../policy/requests.js';
import { scrubDeep } from '../policy/scrub.js';
import { checkAgentToolArgs } from '../schema/validate.js';
import type { Db } from '../store/db.js';
import { tel } from '../telemetry/hooks.js';
import { providerName } from './providers/config.js';
import { NATIVE_TOOLS, offeredTools, toolSpec } from './tools/index.js';
import type { NativeTool, ToolEnv } from './tools/types.js';
import type { Message, ModelProvider, TaskContext, TaskOutcome, TaskRunner, TaskToolSource, ToolCall, ToolResult, ToolSpec, Turn, Usage } from './types.js';

export interface LoopDeps {
  readonly policy: Policy;
  readonly db: () => Db;
  readonly gateEnv: GateEnv;
  readonly env: NodeJS.ProcessEnv;
  /** Tools beyond the native ones for this task (the outbound MCP client), or null. */
  readonly toolSource?: (ctx: TaskContext) => TaskToolSource | null;
}

type Limits = Policy['limits']['agent'];

const MODE_TEXT: Record<TaskContext['mode'], string> = {
  plan: 'PLAN mode: read what you need, change nothing, and call finish with a step-by-step plan as the summary.',
  review: 'REVIEW mode: read and assess, change nothing, and call finish with your findings as the summary.',
  build: 'BUILD mode: make the change, verify it (run_command waits for a person to approve the exact command), then call finish with what you did and how you checked it.',
};

export function systemPrompt(ctx: TaskContext): string {
  return [
    'You are the coding agent of shadowcode, working on one project through the tools offered.',
    `The project root is ${ctx.project}; every path is relative to it and cannot leave it.`,
    MODE_TEXT[ctx.mode],
    `This task's permission ceiling is ${ctx.ceiling}; a tool call the policy refuses comes back as an error naming the rule. Do not retry a refused call unchanged.`,
    'Read a file before editing it. edit_file needs old_text copied exactly (without the line-number prefixes read_file shows).',
    'End by calling finish exactly once.',
  ].join('\n');
}

/** Head and tail of a long text, with what was left out said in the middle. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const note = `\n[... ${text.length - max} of ${text.length} characters omitted ...]\n`;
  const keep = Math.max(0, max - note.length);
  const head = Math.ceil(keep * 0.6);
  return text.slice(0, head) + note + text.slice(text.length - (keep - head));
}

export function estimateTokens(system: string, messages: readonly Message[], tools: readonly ToolSpec[], charsPerToken: number): number {
  let chars = system.length + JSON.stringify(tools).length;
  for (const m of messages) {
    chars += m.content.length + 16;
    if (m.role === 'assistant' && m.tool_calls) for (const c of m.tool_calls) chars += c.name.length + c.arguments.length + c.id.length + 16;
  }
  return Math.ceil(chars / charsPerToken);
}

/**
 * Makes the conversation fit: the oldest tool outputs are cut down first, one
 * at a time, until the estimate plus the output budget fits the window.
 * Returns how many were trimmed, or null when even trimming all does not fit.
 */
export function fitContext(system: string, messages: Message[], tools: readonly ToolSpec[], window: number, l: Limits, trimmed: Set<number>): number | null {
  const budget = window - l.max_output_tokens;
  let n = 0;
  for (let i = 0; estimateTokens(system, messages, tools, l.chars_per_token) > budget; i++) {
    while (i < messages.length && (messages[i]?.role !== 'tool' || trimmed.has(i) || (messages[i]?.content.length ?? 0) <= l.trimmed_output_chars)) i++;
    if (i >= messages.length) return null;
    const m = messages[i] as Extract<Message, { role: 'tool' }>;
    messages[i] = { ...m, content: `${m.content.slice(0, l.trimmed_output_chars)}\n[trimmed to fit the context: ${m.content.length - l.trimmed_output_chars} characters dropped]` };
    trimmed.add(i);
    n++;
  }
  return n;
}

/** `""` is `{}`; anything else must be a JSON object. */
export function parseArgs(raw: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    const v = JSON.parse(raw) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, error: 'the arguments are JSON but not an object' };
    return { ok: true, value: v as Record<string, unknown> };
  } catch (err) {
    return { ok: false, error: `the arguments are not valid JSON (${(err as Error).message})` };
  }
}

function errorResult(err: unknown): ToolResult {
  if (err instanceof ScError) return { content: `${err.code}: ${err.message}`, is_error: true };
  return { content: `SC_INTERNAL: ${(err as Error)?.message ?? String(err)}`, is_error: true };
}

/** A turn of the event loop: I/O (a cancel, a ping) is handled between two tool calls of one answer. */
const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What stays of a refused call's arguments in the conversation: valid JSON naming what was dropped. */
export function forgottenArguments(call: ToolCall, max: number): ToolCall {
  if (call.arguments.length <= max) return call;
  return { ...call, arguments: JSON.stringify({ omitted: `${call.arguments.length} characters of arguments, not kept because the call was refused` }) };
}

class Stop extends Error {
  constructor(readonly outcome: TaskOutcome) {
    super(outcome.reason?.message ?? outcome.state);
  }
}

export class NativeLoop implements TaskRunner {
  constructor(private readonly provider: ModelProvider, private readonly deps: LoopDeps) {}

  async run(ctx: TaskContext): Promise<TaskOutcome> {
    const l = this.deps.policy.limits.agent;
    const started = Date.now();
    const usage = { input_tokens: 0, output_tokens: 0 };
    let steps = 0;
    const fail = (code: string, message: string): never => {
      throw new Stop({ state: 'failed', summary: null, reason: { code, message }, usage: { ...usage }, steps });
    };
    const wall = AbortSignal.timeout(l.wall_time_ms);
    const signal = AbortSignal.any([ctx.signal, wall]);
    const stopped = (): TaskOutcome | null => {
      if (ctx.signal.aborted) return { state: 'cancelled', summary: null, reason: { code: 'SC_CANCELLED', message: 'the task was cancelled' }, usage: { ...usage }, steps };
      if (wall.aborted) return { state: 'failed', summary: null, reason: { code: 'SC_LIMIT_REACHED', message: `the task ran past its wall time of ${l.wall_time_ms} ms` }, usage: { ...usage }, steps };
      return null;
    };
    const source = this.deps.toolSource?.(ctx) ?? null;
    try {
      const native = offeredTools(ctx.mode);
      const specs: ToolSpec[] = [...native.map(toolSpec), ...(source ? await source.tools() : [])];
      const env = this.toolEnv(ctx);
      const system = systemPrompt(ctx);
      const messages: Message[] = [{ role: 'user', content: ctx.prompt }];
      const trimmed = new Set<number>();
      const window = this.provider.contextTokens > 0 ? this.provider.contextTokens : this.deps.policy.limits.models.default_context_tokens;
      let failedTurns = 0;
      for (;;) {
        const halt = stopped();
        if (halt) return halt;
        if (steps >= l.max_steps) fail('SC_LIMIT_REACHED', `the task used its ${l.max_steps} model requests without finishing`);
        if (usage.input_tokens + usage.output_tokens >= l.total_tokens) fail('SC_LIMIT_REACHED', `the task used ${usage.input_tokens + usage.output_tokens} tokens, past its limit of ${l.total_tokens}`);
        const cut = fitContext(system, messages, specs, window, l, trimmed);
        if (cut === null) fail('SC_LIMIT_REACHED', `the conversation no longer fits the model's context of ${window} tokens, even with every tool output trimmed`);
        steps++;
        const estimated = estimateTokens(system, messages, specs, l.chars_per_token);
        ctx.emit('model_request', { step: steps, model: this.provider.id, messages: messages.length, estimated_tokens: estimated, ...(cut ? { trimmed_outputs: cut } : {}) });
        const t0 = Date.now();
        let turn: Turn;
        try {
          turn = await enforce(this.deps.gateEnv, this.modelRequest(ctx), (ticket) =>
            // The last net before the wire: whatever a tool, a server's catalog or the prompt carried, no known secret value leaves.
            this.chat(messages, () => this.provider.turn(ticket, { ...scrubDeep({ system, messages: [...messages], tools: specs }), max_output_tokens: l.max_output_tokens, signal })),
          );
        } catch (err) {
          const halt2 = stopped();
          if (halt2) return halt2;
          const e = err instanceof ScError ? err : new ScError('SC_INTERNAL', (err as Error)?.message ?? String(err));
          return fail(e.code, `the model request failed: ${e.message}`);
        }
        if (turn.usage) {
          usage.input_tokens += turn.usage.input_tokens;
          usage.output_tokens += turn.usage.output_tokens;
        }
        const made = turn.tool_calls_made ?? turn.tool_calls.length;
        const cap = l.tool_calls_per_answer;
        // Past the cap only one more call is kept, to carry the refusal; the others never enter the conversation.
        const calls: ToolCall[] = made > cap ? turn.tool_calls.slice(0, cap + 1) : [...turn.tool_calls];
        ctx.emit('model_response', {
          step: steps, stop: turn.stop, ms: Date.now() - t0, usage: turn.usage, text: capText(turn.text, l.event_text_chars),
          tool_calls: calls.slice(0, cap).map((c) => ({ id: c.id, name: c.name })), ...(made > cap ? { tool_calls_made: made } : {}),
        });
        if (calls.length === 0) {
          if (turn.stop === 'length') fail('SC_MODEL_TURN_INCOMPLETE', `the model's answer stopped at the output limit of ${l.max_output_tokens} tokens before it finished`);
          if (turn.stop === 'content_filter') fail('SC_MODEL_TURN_INCOMPLETE', "the model's answer was stopped by its provider's content filter");
          // An answer with no tool call ends the task: the text is its summary.
          const summary = turn.text.slice(0, l.summary_chars);
          if (ctx.mode === 'plan' && summary.trim()) ctx.emit('plan', { text: summary, via: 'answer' });
          return { state: 'succeeded', summary, usage: { ...usage }, steps };
        }
        messages.push({ role: 'assistant', content: turn.text, tool_calls: calls });
        const refuse = (i: number, content: string): void => {
          const call = calls[i] as ToolCall;
          calls[i] = forgottenArguments(call, l.refused_argument_chars);
          this.answer(ctx, messages, call, { content, is_error: true });
        };
        if (turn.stop === 'length') {
          // A call cut off by the length limit may look complete; none of this turn runs.
          failedTurns++;
          ctx.emit('turn_failed', { step: steps, reason: 'length', calls: calls.length });
          for (let i = 0; i < calls.length; i++) refuse(i, `SC_MODEL_TURN_INCOMPLETE: your answer stopped at the output limit (${l.max_output_tokens} tokens) while making this call, so it was not run. Make smaller calls (for a large file, write it in parts with edit_file).`);
          if (failedTurns >= 2) fail('SC_MODEL_TURN_INCOMPLETE', `two answers in a row stopped at the output limit of ${l.max_output_tokens} tokens in the middle of a tool call`);
          continue;
        }
        failedTurns = 0;
        let summary: string | null = null;
        for (let i = 0; i < calls.length; i++) {
          const call = calls[i] as ToolCall;
          if (i === cap) {
            ctx.emit('tool_calls_refused', { step: steps, code: 'SC_TOOL_CALL_LIMIT', made, run: cap, refused: made - cap });
            refuse(i, `SC_TOOL_CALL_LIMIT: your answer made ${made} tool calls; at most ${cap} are taken from one answer. The first ${cap} were handled; this call and the ${made - cap - 1} after it were not run and are left out of the conversation. Make at most ${cap} calls in one answer.`);
            break;
          }
          if (summary !== null) {
            this.answer(ctx, messages, call, { content: 'Not run: the task already finished.', is_error: true });
            continue;
          }
          if (i > 0) await yieldToIo();
          const halt3 = stopped();
          if (halt3) return halt3;
          ctx.emit('tool_call', { step: steps, id: call.id, name: call.name, arguments: capText(call.arguments, l.event_text_chars) });
          const t1 = Date.now();
          const t = tel();
          const result = t ? await t.span(`execute_tool ${call.name}`, 'internal', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.name, 'gen_ai.tool.call.id': call.id, 'gen_ai.tool.call.arguments': t.content(call.arguments) }, async (s) => {
            const r = await this.execute(ctx, env, source, call);
            if (r.is_error) s.fail('tool_error');
            s.set({ 'gen_ai.tool.call.result': t.content(r.content) });
            return r;
          }) : await this.execute(ctx, env, source, call);
          const halt4 = stopped();
          if (halt4) return halt4;
          if (result.is_error) calls[i] = forgottenArguments(call, l.refused_argument_chars);
          this.answer(ctx, messages, call, result, Date.now() - t1);
          if (call.name === 'finish' && !result.is_error) summary = result.content;
        }
        if (summary !== null) return { state: 'succeeded', summary, usage: { ...usage }, steps };
      }
    } catch (err) {
      if (err instanceof Stop) return err.outcome;
      const halt = stopped();
      if (halt) return halt;
      throw err;
    } finally {
      await source?.close().catch(() => {});
    }
  }

  /** One tool result into the conversation and the job's events: capped and scrubbed of known secrets. */
  private answer(ctx: TaskContext, messages: Message[], call: ToolCall, r: ToolResult, ms?: number): void {
    const l = this.deps.policy.limits.agent;
    // Scrubbed before it is cut, so a cut cannot leave half of a secret that the scrubber no longer recognises.
    const content = capText(scrubText(r.content), l.tool_output_chars);
    messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content, ...(r.is_error ? { is_error: true } : {}) });
    ctx.emit('tool_result', { id: call.id, name: call.name, is_error: r.is_error, content: capText(content, l.event_text_chars), ...(ms !== undefined ? { ms } : {}) });
  }

  private async execute(ctx: TaskContext, env: ToolEnv, source: TaskToolSource | null, call: ToolCall): Promise<ToolResult> {
    const parsed = parseArgs(call.arguments);
    const native = NATIVE_TOOLS.get(call.name);
    const offered = native && (ctx.mode === 'build' || !native.writes);
    // A native name is never handed to the extra source: a plan task's write_file stays refused.
    if (!offered && (native !== undefined || !(source?.has(call.name) ?? false))) {
      const why = native ? `${call.name} is not offered in ${ctx.mode} mode, which cannot change the project` : `there is no tool named ${JSON.stringify(call.name.slice(0, 128))}`;
      return { content: `SC_TOOL_UNKNOWN: ${why}; use one of the tools offered`, is_error: true };
    }
    if (!parsed.ok) return { content: `SC_TOOL_ARGS_INVALID: ${parsed.error}; the call was not run. Send the arguments again as one JSON object.`, is_error: true };
    try {
      if (!offered) return await (source as TaskToolSource).call(call.name, parsed.value, ctx);
      const tool = native as NativeTool<any>;
      const args = checkAgentToolArgs<Record<string, unknown>>(call.name, parsed.value);
      const req = taskToolRequest(ctx, env.trust(), call.name, tool.describe(args));
      return await enforce(this.deps.gateEnv, req, (ticket) => tool.run(env, args, ticket));
    } catch (err) {
      return errorResult(err);
    }
  }

  /** One model request in its `chat` CLIENT span (telemetry on): model, provider, endpoint, token use, finish reason. */
  private chat(messages: readonly Message[], fn: () => Promise<Turn>): Promise<Turn> {
    const t = tel();
    if (!t) return fn();
    let server: { address?: string; port?: number } = {};
    try {
      const u = new URL(this.provider.endpoint.url);
      server = { address: u.hostname, port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
    } catch {
      // an endpoint that does not parse never reaches the wire either
    }
    const attrs = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': providerName(this.provider.kind), 'gen_ai.request.model': this.provider.model, 'server.address': server.address, 'server.port': server.port, 'gen_ai.input.messages': t.content(messages) };
    return t.span(`chat ${this.provider.model}`, 'client', attrs, async (s) => {
      const turn = await fn();
      s.set({ 'gen_ai.usage.input_tokens': turn.usage?.input_tokens, 'gen_ai.usage.output_tokens': turn.usage?.output_tokens, 'gen_ai.response.finish_reasons': [turn.stop], 'gen_ai.output.messages': t.content([{ role: 'assistant', text: turn.text, tool_calls: turn.tool_calls.map((c) => c.name) }]) });
      return turn;
    });
  }

  private toolEnv(ctx: TaskContext): ToolEnv {
    const d = this.deps;
    return {
      ctx, policy: d.policy, db: d.db, gate: d.gateEnv, env: d.env,
      trust: () => trustOf(d.db(), ctx.project),
    };
  }

  private modelRequest(ctx: TaskContext) {
    const url = this.provider.endpoint.url;
    let host = '';
    try {
      host = new URL(url).host;
    } catch {
      host = '(invalid)';
    }
    return modelRequest(ctx, trustOf(this.deps.db(), ctx.project), { id: this.provider.id, loopback: this.provider.endpoint.loopback, host }, { job_id: ctx.jobId });
  }
}

export type { Usage };
