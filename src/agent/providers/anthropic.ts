/*
 * The Anthropic Messages API, streamed.
 *
 *   TurnRequest ─► {model, system, messages (tool results as user tool_result blocks,
 *                   same-role messages merged), tools, max_tokens, stream}
 *     ─► POST {base}/v1/messages ─► SSE events
 *     ─► message_start (input usage) · content_block_start text|tool_use
 *        · content_block_delta text_delta|input_json_delta · content_block_stop
 *        · message_delta (stop_reason, output usage) · message_stop | error ─► Turn
 *
 * Blocks are keyed by their index; a tool_use block's arguments are the raw
 * input_json_delta text (or its start `input` when no delta came).
 */
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { MAX_KEPT_CALLS, type Message, type ModelProvider, type StopReason, type ToolCall, type Turn, type TurnRequest } from '../types.js';
import type { ProviderConfig } from './config.js';
import { SseReader } from './sse.js';
import { postStream, redactedMessage } from './wire.js';

export const ANTHROPIC_VERSION = '2023-06-01';

const STOP: Record<string, StopReason> = { end_turn: 'end', stop_sequence: 'end', tool_use: 'tool_calls', max_tokens: 'length', refusal: 'content_filter' };

type Block = Record<string, unknown>;

/** The input object a tool_use block must carry; arguments that do not parse become {} (the loop reports them to the model). */
function inputOf(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function wireMessages(messages: readonly Message[]): Array<{ role: 'user' | 'assistant'; content: Block[] }> {
  const out: Array<{ role: 'user' | 'assistant'; content: Block[] }> = [];
  const add = (role: 'user' | 'assistant', blocks: Block[]): void => {
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') add('user', [{ type: 'text', text: m.content }]);
    else if (m.role === 'tool') add('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content, ...(m.is_error ? { is_error: true } : {}) }]);
    else {
      const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: inputOf(c.arguments) });
      add('assistant', blocks.length ? blocks : [{ type: 'text', text: '(no answer)' }]);
    }
  }
  return out;
}

interface ToolBlock {
  id: string;
  name: string;
  args: string;
  start: unknown;
}

/** Where the input of tool blocks past MAX_KEPT_CALLS goes: nowhere. */
const SINK: ToolBlock = { id: '', name: '', args: '', start: undefined };

export class MessagesAccumulator {
  text = '';
  private readonly tools = new Map<number, ToolBlock>();
  private readonly order: ToolBlock[] = [];
  private made = 0;
  private stop: StopReason | null = null;
  private input = 0;
  private output = 0;
  private sawUsage = false;
  done = false;

  constructor(private readonly label: string, private readonly onText?: (d: string) => void) {}

  event(name: string, data: string): void {
    if (this.done) return;
    let ev: any;
    try {
      ev = JSON.parse(data);
    } catch {
      throw new ScError('SC_MODEL_FAILED', `model ${this.label}: malformed stream event (not JSON)`, { status: 200 });
    }
    if (ev === null || typeof ev !== 'object') throw new ScError('SC_MODEL_FAILED', `model ${this.label}: malformed stream event`, { status: 200 });
    const type = typeof ev.type === 'string' ? ev.type : name;
    switch (type) {
      case 'message_start': {
        const u = ev.message?.usage;
        if (u) {
          this.sawUsage = true;
          this.input = Number(u.input_tokens) || 0;
          this.output = Number(u.output_tokens) || 0;
        }
        return;
      }
      case 'content_block_start': {
        const b = ev.content_block;
        if (b?.type === 'tool_use') {
          this.made++;
          // Past MAX_KEPT_CALLS a block is only counted: its deltas go to the sink, so memory stays bounded.
          if (this.order.length >= MAX_KEPT_CALLS) {
            this.tools.set(Number(ev.index), SINK);
            return;
          }
          const t: ToolBlock = { id: String(b.id ?? `toolu_${this.order.length}`), name: String(b.name ?? ''), args: '', start: b.input };
          this.tools.set(Number(ev.index), t);
          this.order.push(t);
        } else if (b?.type === 'text' && typeof b.text === 'string' && b.text) this.addText(b.text);
        return;
      }
      case 'content_block_delta': {
        const d = ev.delta;
        if (d?.type === 'text_delta' && typeof d.text === 'string') this.addText(d.text);
        else if (d?.type === 'input_json_delta' && typeof d.partial_json === 'string') {
          const t = this.tools.get(Number(ev.index));
          if (!t) throw new ScError('SC_MODEL_FAILED', `model ${this.label}: tool input for a block that was never started`, { status: 200 });
          if (t !== SINK) t.args += d.partial_json;
        }
        return;
      }
      case 'message_delta': {
        if (typeof ev.delta?.stop_reason === 'string') this.stop = STOP[ev.delta.stop_reason] ?? 'other';
        if (ev.usage && ev.usage.output_tokens !== undefined) {
          this.sawUsage = true;
          this.output = Number(ev.usage.output_tokens) || 0;
        }
        return;
      }
      case 'message_stop':
        this.done = true;
        return;
      case 'error':
        throw new ScError('SC_MODEL_FAILED', `model ${this.label}: the stream reported an error: ${redactedMessage(String(ev.error?.message ?? ev.error?.type ?? 'error'))}`, { status: 200 });
      default:
        return; // ping, content_block_stop, and event types added later
    }
  }

  private addText(d: string): void {
    this.text += d;
    this.onText?.(d);
  }

  turn(): Turn {
    if (!this.done && this.stop === null) throw new ScError('SC_MODEL_FAILED', `model ${this.label}: the stream ended before message_stop`, { status: 200 });
    const tool_calls: ToolCall[] = this.order.map((t) => ({
      id: t.id,
      name: t.name,
      arguments: t.args === '' && t.start && typeof t.start === 'object' && Object.keys(t.start).length ? JSON.stringify(t.start) : t.args,
    }));
    return { text: this.text, tool_calls, stop: this.stop ?? 'other', usage: this.sawUsage ? { input_tokens: this.input, output_tokens: this.output } : null, ...(this.made > tool_calls.length ? { tool_calls_made: this.made } : {}) };
  }
}

export class AnthropicProvider implements ModelProvider {
  readonly id: string;
  readonly kind = 'anthropic' as const;
  readonly model: string;
  readonly endpoint: ModelProvider['endpoint'];
  readonly contextTokens: number;

  constructor(private readonly cfg: ProviderConfig) {
    this.id = cfg.id;
    this.model = cfg.model;
    this.endpoint = { url: cfg.url.toString(), loopback: cfg.loopback };
    this.contextTokens = cfg.contextTokens;
  }

  async turn(ticket: GateTicket, req: TurnRequest): Promise<Turn> {
    assertTicket(ticket, 'model:request');
    const body: Record<string, unknown> = {
      model: this.model,
      max_tokens: req.max_output_tokens,
      messages: wireMessages(req.messages),
      stream: true,
    };
    if (req.system) body.system = req.system;
    if (req.tools.length) body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema }));
    const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
    if (this.cfg.key) headers['x-api-key'] = this.cfg.key;
    const acc = new MessagesAccumulator(this.id, req.onText);
    const sse = new SseReader((e) => acc.event(e.event, e.data));
    const base = this.cfg.url.toString();
    await postStream(
      ticket,
      { url: new URL('v1/messages', base.endsWith('/') ? base : `${base}/`), headers, body: JSON.stringify(body), limits: this.cfg.limits, signal: req.signal, label: this.id },
      (chunk) => sse.push(chunk),
    );
    sse.end();
    return acc.turn();
  }
}
