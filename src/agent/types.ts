/*
 * The contracts inside the agent runtime, shared by the task loop, the model
 * providers, the CLI runners and the outbound MCP client.
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
import type { GateTicket, Level } from '../ticket.js';

/** A function the model may call, in the provider-neutral shape. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly input_schema: Readonly<Record<string, unknown>>;
}

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

export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

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

export type TaskMode = 'plan' | 'review' | 'build';
export type ApprovalKind = 'command' | 'write' | 'mcp_call';
export type ApprovalOutcome = 'approved' | 'denied' | 'cancelled';

/** What a task runner is given by the engine for one job. */
export interface TaskContext {
  readonly jobId: string;
  /** The project's canonical real path. */
  readonly project: string;
  readonly mode: TaskMode;
  /** min(project level, connection flags, requested level); writes need at least workspace. */
  readonly ceiling: Level;
  readonly owner: string;
  readonly prompt: string;
  readonly signal: AbortSignal;
  /** Appends a durable job event; the host redacts known secret values first. */
  emit(kind: string, body: Record<string, unknown>): void;
  /** Records an exact pending approval and waits for its decision (or cancellation). */
  requestApproval(kind: ApprovalKind, action: Record<string, unknown>): Promise<ApprovalOutcome>;
}

export interface TaskOutcome {
  readonly state: 'succeeded' | 'failed' | 'cancelled';
  /** The `finish` summary (or the runner's final answer). */
  readonly summary: string | null;
  /** Why it failed or was cancelled, in one line, with a stable code where there is one. */
  readonly reason?: { readonly code: string; readonly message: string };
  readonly usage?: Usage;
  readonly steps?: number;
}

/** Runs one task to its end: the native loop over a ModelProvider, or a vendor CLI. */
export interface TaskRunner {
  run(ctx: TaskContext): Promise<TaskOutcome>;
}

/** The result of a tool call as the model will see it. */
export interface ToolResult {
  readonly content: string;
  readonly is_error: boolean;
}

/**
 * Tools beyond the native ones (the outbound MCP client's `mcp__server__tool`,
 * `mcp_tools`, `mcp_call`). Opened lazily for one task, closed before the task
 * reports completion, on every exit path.
 */
export interface TaskToolSource {
  tools(): Promise<readonly ToolSpec[]>;
  has(name: string): boolean;
  call(name: string, args: unknown, ctx: TaskContext): Promise<ToolResult>;
  close(): Promise<void>;
}

export type { GateTicket, Level };
