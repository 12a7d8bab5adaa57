/*
 * OpenAI-compatible Chat Completions, streamed: OpenAI itself, Ollama, llama.cpp
 * server, vLLM, LM Studio and hosted look-alikes.
 *
 *   TurnRequest ─► {model, messages, tools, stream, stream_options.include_usage}
 *     ─► POST {base}/chat/completions ─► SSE `data:` chunks
 *     ─► delta.content (text) · delta.tool_calls (accumulated) · finish_reason · usage
 *     ─► `[DONE]` (or the stream's end after a finish_reason) ─► Turn
 *
 * Tool calls are accumulated defensively: a delta with an id not seen yet opens
 * a call (Ollama gives every parallel call index 0), a delta without an id
 * continues the latest call with its index, or the latest call at all when the
 * server leaves the index out. Arguments stay the raw text that arrived.
 * Calls are found through maps, never by scanning: an answer with hundreds of
 * thousands of ids costs its size, not its size squared. Past MAX_KEPT_CALLS
 * calls are only counted (their deltas go to one shared sink), so such an
 * answer's memory stays bounded too; the loop refuses them anyway.
 */
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { MAX_KEPT_CALLS, type Message, type ModelProvider, type StopReason, type ToolCall, type Turn, type TurnRequest, type Usage } from '../types.js';
import type { ProviderConfig } from './config.js';
import { SseReader } from './sse.js';
import { postStream, redactedMessage } from './wire.js';

/** A call being accumulated; already in the shape of a ToolCall, so the turn hands the slots over as they are. */
interface Slot {
  id: string;
  name: string;
  arguments: string;
}

/** Where the deltas of calls past MAX_KEPT_CALLS go: nowhere. */
const SINK: Slot = { id: '', name: '', arguments: '' };

const NO_FUNCTION: { name?: unknown; arguments?: unknown } = Object.freeze({});

const STOP: Record<string, StopReason> = { stop: 'end', tool_calls: 'tool_calls', function_call: 'tool_calls', length: 'length', content_filter: 'content_filter' };

function wireMessages(system: string, messages: readonly Message[]): unknown[] {
  const out: unknown[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.tool_call_id, content: m.content });
    else if (m.tool_calls?.length) {
      out.push({
        role: 'assistant',
        content: m.content || null,
        tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      });
    } else out.push({ role: 'assistant', content: m.content });
  }
  return out;
}

/** Folds the stream's chunks into a Turn. */
export class ChatAccumulator {
  text = '';
  private readonly slots: Slot[] = [];
  /** Slots by id, and the latest slot of each index: a delta finds its call in constant time. */
  private readonly byId = new Map<string, Slot>();
  private readonly byIndex = new Map<number, Slot>();
  /** The latest call opened (the sink once past the cap), and how many were opened. */
  private latest: Slot | undefined;
  private made = 0;
  stop: StopReason | null = null;
  usage: Usage | null = null;
  done = false;

  constructor(private readonly label: string, private readonly onText?: (d: string) => void) {}

  event(data: string): void {
    if (this.done) return;
    if (data.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: any;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new ScError('SC_MODEL_FAILED', `model ${this.label}: malformed stream event (not JSON)`, { status: 200 });
    }
    if (chunk === null || typeof chunk !== 'object') throw new ScError('SC_MODEL_FAILED', `model ${this.label}: malformed stream event`, { status: 200 });
    if (chunk.error) {
      const msg = typeof chunk.error === 'string' ? chunk.error : String(chunk.error.message ?? 'error');
      throw new ScError('SC_MODEL_FAILED', `model ${this.label}: the stream reported an error: ${redactedMessage(msg)}`, { status: 200 });
    }
    if (chunk.usage && typeof chunk.usage === 'object') {
      this.usage = { input_tokens: Number(chunk.usage.prompt_tokens) || 0, output_tokens: Number(chunk.usage.completion_tokens) || 0 };
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!choice || typeof choice !== 'object') return;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content) {
      this.text += delta.content;
      this.onText?.(delta.content);
    }
    if (Array.isArray(delta.tool_calls)) for (const tc of delta.tool_calls) this.toolDelta(tc);
    if (typeof choice.finish_reason === 'string' && choice.finish_reason) this.stop = STOP[choice.finish_reason] ?? 'other';
  }

  private toolDelta(tc: any): void {
    if (!tc || typeof tc !== 'object') return;
    const index = typeof tc.index === 'number' ? tc.index : null;
    const id = typeof tc.id === 'string' && tc.id ? tc.id : null;
    let slot: Slot | undefined;
    if (id) slot = this.byId.get(id);
    else if (index !== null) slot = this.byIndex.get(index);
    else slot = this.latest;
    if (!slot) {
      this.made++;
      if (this.slots.length < MAX_KEPT_CALLS) {
        slot = { id: id ?? `call_${this.slots.length}`, name: '', arguments: '' };
        this.slots.push(slot);
        // An id given was looked up and not found; a made-up one must not shadow a real call's.
        if (id || !this.byId.has(slot.id)) this.byId.set(slot.id, slot);
      } else slot = SINK;
      if (index !== null) this.byIndex.set(index, slot);
      this.latest = slot;
    }
    if (slot === SINK) return;
    const fn = tc.function ?? NO_FUNCTION;
    if (typeof fn.name === 'string' && fn.name && slot.name !== fn.name) slot.name += fn.name;
    if (typeof fn.arguments === 'string' && fn.arguments) slot.arguments += fn.arguments;
  }

  turn(): Turn {
    if (this.stop === null) throw new ScError('SC_MODEL_FAILED', `model ${this.label}: the stream ended before a finish reason`, { status: 200 });
    const tool_calls: ToolCall[] = this.slots.slice();
    return { text: this.text, tool_calls, stop: this.stop, usage: this.usage, ...(this.made > tool_calls.length ? { tool_calls_made: this.made } : {}) };
  }
}

export class OpenAiCompatibleProvider implements ModelProvider {
  readonly id: string;
  readonly kind: ModelProvider['kind'];
  readonly model: string;
  readonly endpoint: ModelProvider['endpoint'];
  readonly contextTokens: number;

  constructor(private readonly cfg: ProviderConfig) {
    this.id = cfg.id;
    this.kind = cfg.kind;
    this.model = cfg.model;
    this.endpoint = { url: cfg.url.toString(), loopback: cfg.loopback };
    this.contextTokens = cfg.contextTokens;
  }

  async turn(ticket: GateTicket, req: TurnRequest): Promise<Turn> {
    assertTicket(ticket, 'model:request');
    const body: Record<string, unknown> = {
      model: this.model,
      messages: wireMessages(req.system, req.messages),
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: req.max_output_tokens,
    };
    if (req.tools.length) body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } }));
    const headers: Record<string, string> = {};
    if (this.cfg.key) headers.authorization = `Bearer ${this.cfg.key}`;
    const acc = new ChatAccumulator(this.id, req.onText);
    const sse = new SseReader((e) => acc.event(e.data));
    const base = this.cfg.url.toString();
    await postStream(
      ticket,
      { url: new URL('chat/completions', base.endsWith('/') ? base : `${base}/`), headers, body: JSON.stringify(body), limits: this.cfg.limits, signal: req.signal, label: this.id },
      (chunk) => sse.push(chunk),
    );
    sse.end();
    return acc.turn();
  }
}
