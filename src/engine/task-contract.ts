/*
 * The contract between the job engine and whatever runs a task in it (the native
 * loop, a coding-CLI runner), and the shape of tools beyond the native ones that
 * the outbound client offers a task. It sits in the engine layer, below the
 * client and the agent runtime that both use it, and imports only the ticket.
 *
 *   Jobs.startAgent ─► TaskRunner.run(ctx) ─► TaskOutcome
 *   ctx.emit ─► job events (redacted by the engine)   ctx.requestApproval ─► exact approval row
 *   TaskToolSource (client/task-tools.ts) ─► tools(), call(name, args, ctx)
 */
import type { Level } from '../ticket.js';

/** A function the model may call, in the provider-neutral shape. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly input_schema: Readonly<Record<string, unknown>>;
}

export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens: number;
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
