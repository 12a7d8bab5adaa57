/*
 * The door every layer calls to report what it did; behind it, OpenTelemetry export.
 *
 *   tel() ─► undefined   export is off: the hook point pays one call and one null check,
 *                        and nothing of the OpenTelemetry SDK is loaded (this module imports nothing)
 *         └► Telemetry   export is on: src/telemetry/sdk.ts, loaded by ops/telemetry.ts only when
 *                        configured, queues spans, log records and metrics for a background export
 *
 * Every method returns at once: an export never runs on a caller's path, and a slow or dead
 * collector only fills a capped queue (what overflows is dropped and counted).
 */

import type { CommittedAudit } from '../store/audit.js';

/** Attribute values as OpenTelemetry takes them; undefined ones are left out. */
export type Attrs = Record<string, string | number | boolean | string[] | undefined>;

/** One MCP request, as its handler sees it. */
export interface McpRequestInfo {
  readonly method: string;
  /** The tool or prompt name, when the method has one. */
  readonly target?: string | undefined;
  readonly id?: string | number | undefined;
  /** params._meta as received: traceparent and tracestate in it make the caller's span the parent. */
  readonly meta?: unknown;
  readonly protocolVersion?: string | undefined;
  /** pipe for stdio, tcp for HTTP. */
  readonly transport: 'pipe' | 'tcp';
  /** The tool's arguments: exported only when the profile opts in to content, and scrubbed. */
  readonly args?: unknown;
  /** The peer (an outbound call's server). */
  readonly server?: { readonly address: string; readonly port?: number | undefined } | undefined;
}

/** One gate decision, just committed with its audit row. */
export interface GateDecided {
  readonly action: string;
  readonly principal: string;
  readonly allow: boolean;
  readonly reasons: readonly string[];
  readonly decisionId: string;
  readonly ceiling?: string | undefined;
  /** The masked arguments recorded with it: exported only with the content opt-in. */
  readonly args?: unknown;
}

/** The span a `span()` callback runs in, to add what it learns. */
export interface SpanHandle {
  set(attrs: Attrs): void;
  /** Marks the span failed with a low-cardinality error type. */
  fail(type: string, message?: string): void;
}

/** What the exporter did so far, per signal. */
export interface SignalCounts {
  exported: number;
  dropped: number;
  failed: number;
}

export interface TelemetryCounts {
  readonly pid: number;
  readonly started_at: string;
  readonly updated_at: string;
  readonly endpoint: string;
  readonly traces: SignalCounts;
  readonly logs: SignalCounts;
  readonly metrics: SignalCounts;
  readonly last_error: string | null;
}

export interface Telemetry {
  /** The SERVER span of one MCP request around `fn`, or the one already open for it (HTTP opens it before the SDK runs). */
  mcpRequest<T>(info: McpRequestInfo, fn: () => Promise<T>): Promise<T>;
  /** The CLIENT span of one outbound MCP request; `fn` gets the trace context to put in the request's `_meta`. */
  mcpClient<T>(info: McpRequestInfo, fn: (meta: Record<string, string>) => Promise<T>): Promise<T>;
  /** Guardrail spans (children of the active span) and the decision counter, for decisions just committed. */
  decided(list: readonly GateDecided[], policyHash: string, startedMs: number): void;
  /** Audit rows committed in this process, each to become a log record (the store's listener calls it; a short CLI command hands over its rows). */
  audited(rows: readonly CommittedAudit[]): void;
  /** A job (a test command or an agent task), from its submission to its end; its parent is the active span. */
  jobOpened(id: string, kind: 'test' | 'agent', attrs: Attrs): void;
  jobAnnotate(id: string, attrs: Attrs): void;
  /** Ends the job's span (and any approval of it still open) with its final state; unknown ids are ignored. */
  jobClosed(id: string, state: string): void;
  /** Runs fn with the job's span active, so its decisions, model requests and spawns become its children. */
  inJob<T>(id: string, fn: () => T): T;
  /** An approval now pending: an escalate verdict, then its wait until someone decides. */
  approvalOpened(a: { readonly id: string; readonly jobId: string; readonly kind: string; readonly createdAt: string }): void;
  approvalClosed(a: { readonly id: string; readonly state: string; readonly decidedBy: string | null; readonly decidedAt: string | null }): void;
  /** A span around fn, child of the active span. */
  span<T>(name: string, kind: 'internal' | 'client', attrs: Attrs, fn: (s: SpanHandle) => Promise<T>): Promise<T>;
  /** A span from now until `done` settles (a process's life); the attributes it resolves to are added. */
  track(name: string, attrs: Attrs, done: Promise<Attrs>): void;
  /** Adds attributes to the active span. */
  annotate(attrs: Attrs): void;
  /**
   * Runs fn with another process's span as the active one, from the W3C trace context it sent
   * (an engine frame's traceparent): what fn records joins that trace. An absent or malformed
   * context runs fn as it is.
   */
  withParent<T>(context: { readonly traceparent?: string | undefined; readonly tracestate?: string | undefined }, fn: () => T): T;
  /** Puts the active span's W3C traceparent (and tracestate) into outbound headers. */
  inject(carrier: Record<string, string>): void;
  /** Text that may be exported under the content opt-in (scrubbed and capped), else undefined. */
  content(value: unknown): string | undefined;
  counts(): TelemetryCounts;
  /**
   * Sends what is queued, within the policy's deadline; what is left is dropped and counted.
   * `abandoned`: an export was still under way at the deadline (a collector that does not
   * answer), and its retry timers may hold the process up to the export timeout.
   */
  shutdown(): Promise<{ readonly abandoned: boolean }>;
}

let current: Telemetry | undefined;

/** The exporter of this process, or undefined while export is off. */
export function tel(): Telemetry | undefined {
  return current;
}

/** Installed by ops/telemetry.ts once the SDK is up; cleared when it shuts down. */
export function installTelemetry(t: Telemetry | undefined): void {
  current = t;
}
