/*
 * The contracts inside the agent runtime, shared by the task loop, the model
 * providers and the CLI runners. What the engine and the outbound client also
 * use (the task context, outcome and tool shapes) is in engine/task-contract.ts.
 *
 *   job (kind agent) ─► TaskRunner.run(ctx)
 *        native loop:  ─► gate 'model:request' ─► ModelProvider.turn(ticket, req) ─► Turn
 *                      ─► each tool call ─► native tool | TaskToolSource.call ─► result to the model
 *        CLI runner:   ─► the vendor CLI's own loop; its events and approvals go through ctx
 *   ctx.emit ─► job events (redacted by the host)   ctx.requestApproval ─► exact approval row
 *
 * Providers return what the wire said, normalized; the loop decides what it means
 * (a tool turn is whatever tool calls accumulated, whatever the stop reason).
 */
import type { ApprovalKind, ApprovalOutcome, TaskContext, TaskMode, TaskOutcome, TaskRunner, TaskToolSource, ToolResult, ToolSpec, Usage } from '../engine/task-contract.js';
import type { GateTicket, Level } from '../ticket.js';

/** One call as the model made it; `arguments` is the raw accumulated JSON text, not yet parsed. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export type Message =
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string; readonly tool_calls?: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly name: string; readonly content: string; readonly is_error?: boolean };

export interface TurnRequest {
  readonly system: string;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  readonly max_output_tokens: number;
  readonly signal: AbortSignal;
  /** Streamed assistant text as it arrives, for live views. */
  readonly onText?: (delta: string) => void;
}

/** The stop reason as reported, normalized across wire formats. */
export type StopReason = 'end' | 'tool_calls' | 'length' | 'content_filter' | 'other';

export interface Turn {
  readonly text: string;
  readonly tool_calls: readonly ToolCall[];
  readonly stop: StopReason;
  readonly usage: Usage | null;
  /** Set when the answer made more calls than a provider keeps (MAX_KEPT_CALLS): how many it made, at least. */
  readonly tool_calls_made?: number;
}

/**
 * The most tool calls a provider keeps from one answer: one more than the
 * largest agent.tool_calls_per_answer the limits schema allows, so the loop
 * always has the call that carries its refusal, and memory stays bounded.
 */
export const MAX_KEPT_CALLS = 1025;

export type ProviderKind = 'openai-compatible' | 'anthropic' | 'ollama';

/**
 * One configured model. `turn` is an executor: it speaks to the network, so it
 * takes the ticket of a `model:request` decision. Failures throw ScError
 * (SC_MODEL_FAILED with the provider's status and a redacted message, SC_TIMEOUT,
 * SC_MODEL_RESPONSE_TOO_LARGE); nothing hangs past the limits.
 */
export interface ModelProvider {
  readonly id: string;
  readonly kind: ProviderKind;
  readonly model: string;
  readonly endpoint: { readonly url: string; readonly loopback: boolean };
  /** The context window in tokens, as configured or known; the loop trims to fit it. */
  readonly contextTokens: number;
  turn(ticket: GateTicket, req: TurnRequest): Promise<Turn>;
}

// The task contract lives in the engine layer (below the client and this runtime); re-exported for the runtime's own modules.
export type { ApprovalKind, ApprovalOutcome, GateTicket, Level, TaskContext, TaskMode, TaskOutcome, TaskRunner, TaskToolSource, ToolResult, ToolSpec, Usage };
