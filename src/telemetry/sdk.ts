/*
 * The OpenTelemetry export of one process. Loaded only when telemetry is configured
 * (ops/telemetry.ts imports it dynamically; the bundle keeps every @opentelemetry
 * package external and out of the start-up path).
 *
 *   startSdk(ticket cli:telemetry.export, config)
 *     ─► context manager (AsyncLocalStorage): a span opened around a call is the parent of
 *        everything the call does (gate decisions, jobs, model requests, spawns)
 *     ─► traces:  TracerProvider ─► BoundedBatch ─► OTLP exporter (protobuf or JSON over HTTP)
 *     ─► logs:    the audit store's listener ─► LoggerProvider ─► BoundedBatch ─► OTLP exporter
 *                 (one record per audit row, as committed)
 *     ─► metrics: MeterProvider ─► periodic reader ─► OTLP exporter (durations, waits, decisions)
 *     ─► installTelemetry(this): the hooks in every layer start reporting
 *   shutdown() ─► queued items sent within limits.telemetry.shutdown_ms, the rest dropped and counted
 *
 * Names follow the OpenTelemetry GenAI and MCP semantic conventions (docs/telemetry.md lists
 * every span and attribute). Nothing sensitive leaves by default: tool arguments and results,
 * prompts and model text only under the profile's content opt-in, and then scrubbed of
 * secrets. A W3C traceparent in a request's params._meta makes the caller's span the parent.
 */
import { type Attributes, type Context, context, type Counter, createContextKey, defaultTextMapGetter, defaultTextMapSetter, type Histogram, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, TraceFlags, type Tracer } from '@opentelemetry/api';
import { type Logger, SeverityNumber } from '@opentelemetry/api-logs';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, type LogRecordProcessor, type ReadableLogRecord, type SdkLogRecord } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { type ReadableSpan, type SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { type CommittedAudit, onAuditCommitted } from '../store/audit.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { BoundedBatch, type ItemExporter } from './batch.js';
import type { ExportConfig, Signal, SignalTarget } from './config.js';
import { type Attrs, type GateDecided, installTelemetry, type McpRequestInfo, type SignalCounts, type SpanHandle, type Telemetry, type TelemetryCounts } from './hooks.js';
import { writeCounts } from './stats.js';

export interface StartOptions {
  readonly config: ExportConfig;
  readonly profileDir: string;
  readonly version: string;
  /** What this process is (mcp-serve, engine, run, library), as shadowcode.role on the resource. */
  readonly role: string;
  /** The secret scrubber (src/policy/scrub.ts): content passes it before it leaves. */
  readonly scrub: (value: unknown) => unknown;
}

// The GenAI / MCP / guardrail convention names, written out: they live in the GenAI
// semantic-conventions repository now, not in the stable entry point of the package.
const A = {
  mcpMethod: 'mcp.method.name',
  mcpProtocol: 'mcp.protocol.version',
  rpcId: 'jsonrpc.request.id',
  transport: 'network.transport',
  operation: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolArgs: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  promptName: 'gen_ai.prompt.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  agentName: 'gen_ai.agent.name',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  component: 'gen_ai.guardrail.component.name',
  targetType: 'gen_ai.guardrail.target.type',
  targetSubtype: 'gen_ai.guardrail.target.subtype',
  targetId: 'gen_ai.guardrail.target.id',
  verdict: 'gen_ai.guardrail.verdict.type',
  verdictReason: 'gen_ai.guardrail.verdict.reason',
  actionType: 'gen_ai.guardrail.action.type',
  policyId: 'gen_ai.guardrail.security.policy.id',
  ruleId: 'gen_ai.guardrail.security.policy.rule.id',
  contentIn: 'gen_ai.guardrail.security.content.input.value',
} as const;

/** The conventions' bucket boundaries for MCP operation durations, in seconds. */
const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** Approvals wait for a person: seconds to an hour. */
const WAIT_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const GATE = 'shadowcode-policy';
const MCP_REQUEST = createContextKey('shadowcode mcp request span');

function clean(attrs: Attrs): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
}

function errorType(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown };
  if (typeof e?.code === 'string' || typeof e?.code === 'number') return String(e.code);
  return typeof e?.name === 'string' && e.name ? e.name : '_OTHER';
}

/** Which signal a record belongs to, for the counters. */
class Signals {
  readonly traces: SignalCounts = { exported: 0, dropped: 0, failed: 0 };
  readonly logs: SignalCounts = { exported: 0, dropped: 0, failed: 0 };
  readonly metrics: SignalCounts = { exported: 0, dropped: 0, failed: 0 };
  lastError: string | null = null;
  version = 0;
  touch(): void {
    this.version++;
  }
}

// Only the exporters of the configured protocol load, through require: the bundle is one
// CommonJS script, and an import() there would need the loader's dynamic-import hook.
const load = createRequire(import.meta.url);

function exporterFor(signal: Signal, t: SignalTarget): unknown {
  const opts = { url: t.url, headers: { ...t.headers }, timeoutMillis: t.timeoutMs, concurrencyLimit: 2 };
  const json = t.protocol === 'http/json';
  switch (signal) {
    case 'traces': {
      const m = load(json ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
      return new m.OTLPTraceExporter(opts);
    }
    case 'logs': {
      const m = load(json ? '@opentelemetry/exporter-logs-otlp-http' : '@opentelemetry/exporter-logs-otlp-proto') as typeof import('@opentelemetry/exporter-logs-otlp-proto');
      return new m.OTLPLogExporter(opts);
    }
    case 'metrics': {
      const m = load(json ? '@opentelemetry/exporter-metrics-otlp-http' : '@opentelemetry/exporter-metrics-otlp-proto') as typeof import('@opentelemetry/exporter-metrics-otlp-proto');
      return new m.OTLPMetricExporter(opts);
    }
  }
}

/** Spans into a bounded batch; only sampled ones (a caller's traceparent may say not to record). */
class SpanQueue implements SpanProcessor {
  constructor(private readonly batch: BoundedBatch<ReadableSpan>) {}
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (span.spanContext().traceFlags & TraceFlags.SAMPLED) this.batch.push(span);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

class LogQueue implements LogRecordProcessor {
  constructor(private readonly batch: BoundedBatch<ReadableLogRecord>) {}
  onEmit(record: SdkLogRecord): void {
    this.batch.push(record as unknown as ReadableLogRecord);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** A metric exporter that counts what it sent and what failed. */
function countingMetrics(inner: PushMetricExporter, counts: SignalCounts, onError: (e: Error) => void): PushMetricExporter {
  return {
    export(metrics: ResourceMetrics, done) {
      inner.export(metrics, (r) => {
        if (r.code === 0) counts.exported++;
        else {
          counts.failed++;
          if (r.error) onError(r.error);
        }
        done(r);
      });
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
    ...(inner.selectAggregationTemporality ? { selectAggregationTemporality: inner.selectAggregationTemporality.bind(inner) } : {}),
    ...(inner.selectAggregation ? { selectAggregation: inner.selectAggregation.bind(inner) } : {}),
  };
}

interface OpenJob {
  readonly span: Span;
  readonly ctx: Context;
  readonly approvals: Set<string>;
}

interface OpenApproval {
  readonly span: Span;
  readonly jobId: string;
  readonly kind: string;
  readonly createdMs: number;
}

class Sdk implements Telemetry {
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly jobs = new Map<string, OpenJob>();
  private readonly approvals = new Map<string, OpenApproval>();
  private readonly started = new Date().toISOString();
  private statsTimer: NodeJS.Timeout | undefined;
  private written = -1;
  private down: Promise<{ abandoned: boolean }> | undefined;

  constructor(
    private readonly o: StartOptions,
    private readonly tracer: Tracer | undefined,
    private readonly logger: Logger | undefined,
    private readonly parts: {
      readonly tracerProvider?: TracerProvider;
      readonly loggerProvider?: LoggerProvider;
      readonly meterProvider?: MeterProvider;
      readonly spanBatch?: BoundedBatch<ReadableSpan>;
      readonly logBatch?: BoundedBatch<ReadableLogRecord>;
      readonly ownsContext: boolean;
    },
    private readonly signals: Signals,
    private readonly meters: {
      readonly server?: Histogram;
      readonly client?: Histogram;
      readonly wait?: Histogram;
      readonly decisions?: Counter;
    },
  ) {
    this.statsTimer = setInterval(() => this.writeStats(), o.config.statsWriteMs);
    this.statsTimer.unref();
  }

  private start(name: string, kind: SpanKind, attrs: Attrs, parent: Context = context.active(), startTime?: number): Span | undefined {
    return this.tracer?.startSpan(name, { kind, attributes: clean(attrs), ...(startTime !== undefined ? { startTime } : {}) }, parent);
  }

  private mcpAttrs(info: McpRequestInfo): Attrs {
    const tool = info.method === 'tools/call';
    return {
      [A.mcpMethod]: info.method,
      [tool ? A.toolName : A.promptName]: tool || info.method === 'prompts/get' ? info.target : undefined,
      [A.operation]: tool ? 'execute_tool' : undefined,
      [A.rpcId]: info.id === undefined ? undefined : String(info.id),
      [A.mcpProtocol]: info.protocolVersion,
      [A.transport]: info.transport,
      [ATTR_SERVER_ADDRESS]: info.server?.address,
      [ATTR_SERVER_PORT]: info.server?.port,
      [A.toolArgs]: tool ? this.content(info.args) : undefined,
    };
  }

  /** error.type and the result's content, from what an MCP handler returned. */
  private resultAttrs(span: Span, r: unknown): string | undefined {
    const res = r as { isError?: unknown; structuredContent?: { error?: { code?: unknown } } } | undefined;
    if (res && typeof res === 'object' && res.isError === true) {
      const code = res.structuredContent?.error?.code;
      span.setAttributes(clean({ [ATTR_ERROR_TYPE]: 'tool_error', 'shadowcode.error.code': typeof code === 'string' ? code : undefined }));
      span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : 'tool_error' });
      return 'tool_error';
    }
    const out = this.content((r as { structuredContent?: unknown } | undefined)?.structuredContent);
    if (out !== undefined) span.setAttribute(A.toolResult, out);
    return undefined;
  }

  private failed(span: Span | undefined, err: unknown): string {
    const type = errorType(err);
    // The type only: an error's message can hold a path or an argument.
    span?.setAttribute(ATTR_ERROR_TYPE, type);
    span?.setStatus({ code: SpanStatusCode.ERROR, message: type });
    return type;
  }

  private parentFromMeta(meta: unknown): Context {
    const m = meta as Record<string, unknown> | undefined;
    if (m && typeof m === 'object' && typeof m.traceparent === 'string') {
      const carrier: Record<string, string> = { traceparent: m.traceparent };
      if (typeof m.tracestate === 'string') carrier.tracestate = m.tracestate;
      const ctx = this.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
      if (trace.getSpanContext(ctx)) return ctx;
    }
    return context.active();
  }

  async mcpRequest<T>(info: McpRequestInfo, fn: () => Promise<T>): Promise<T> {
    const open = context.active().getValue(MCP_REQUEST) as Span | undefined;
    if (open) {
      // Opened by the HTTP gateway for this request: the handler adds what only it knows.
      open.setAttributes(clean({ [A.mcpProtocol]: info.protocolVersion, [A.toolArgs]: info.method === 'tools/call' ? this.content(info.args) : undefined }));
      try {
        const r = await fn();
        this.resultAttrs(open, r);
        return r;
      } catch (err) {
        this.failed(open, err);
        throw err;
      }
    }
    const parent = this.parentFromMeta(info.meta);
    const attrs = this.mcpAttrs(info);
    const span = this.start(info.target ? `${info.method} ${info.target}` : info.method, SpanKind.SERVER, attrs, parent);
    const t0 = performance.now();
    let error: string | undefined;
    try {
      const ctx = span ? trace.setSpan(parent, span).setValue(MCP_REQUEST, span) : parent.setValue(MCP_REQUEST, trace.getSpan(parent) ?? trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
      const r = await context.with(ctx, fn);
      if (span) error = this.resultAttrs(span, r);
      return r;
    } catch (err) {
      error = this.failed(span, err);
      throw err;
    } finally {
      span?.end();
      this.meters.server?.record((performance.now() - t0) / 1000, clean({ [A.mcpMethod]: info.method, [A.toolName]: attrs[A.toolName] as string | undefined, [A.operation]: attrs[A.operation] as string | undefined, [A.transport]: info.transport, [A.mcpProtocol]: info.protocolVersion, [ATTR_ERROR_TYPE]: error }));
    }
  }

  async mcpClient<T>(info: McpRequestInfo, fn: (meta: Record<string, string>) => Promise<T>): Promise<T> {
    const attrs = this.mcpAttrs(info);
    const parent = context.active();
    const span = this.start(info.target ? `${info.method} ${info.target}` : info.method, SpanKind.CLIENT, attrs, parent);
    const ctx = span ? trace.setSpan(parent, span) : parent;
    const meta: Record<string, string> = {};
    this.propagator.inject(ctx, meta, defaultTextMapSetter);
    const t0 = performance.now();
    let error: string | undefined;
    try {
      const r = await context.with(ctx, () => fn(meta));
      if (span) error = this.resultAttrs(span, r);
      return r;
    } catch (err) {
      error = this.failed(span, err);
      throw err;
    } finally {
      span?.end();
      this.meters.client?.record((performance.now() - t0) / 1000, clean({ [A.mcpMethod]: info.method, [A.toolName]: attrs[A.toolName] as string | undefined, [A.operation]: attrs[A.operation] as string | undefined, [A.transport]: info.transport, [A.mcpProtocol]: info.protocolVersion, [ATTR_ERROR_TYPE]: error }));
    }
  }

  private guardrail(parent: Context, startMs: number, endMs: number, attrs: Attrs): void {
    const span = this.start(`run_guardrail ${GATE}`, SpanKind.INTERNAL, { [A.operation]: 'run_guardrail', [A.component]: GATE, [A.targetType]: 'input', ...attrs }, parent, startMs);
    span?.end(endMs);
    this.meters.decisions?.add(1, clean({ [A.verdict]: attrs[A.verdict] as string, 'shadowcode.action': attrs['shadowcode.action'] as string }));
  }

  decided(list: readonly GateDecided[], policyHash: string, startedMs: number): void {
    const now = Date.now();
    const parent = context.active();
    for (const d of list) {
      const family = d.action.split(':')[0] ?? d.action;
      this.guardrail(parent, startedMs, now, {
        [A.targetSubtype]: family === 'tool' || d.action === 'mcp:call' ? 'tool_call' : d.action === 'model:request' ? 'llm' : family,
        [A.targetId]: d.decisionId,
        [A.verdict]: d.allow ? 'allow' : 'deny',
        [A.actionType]: d.allow ? 'allow' : 'block',
        [A.verdictReason]: d.allow ? undefined : `denied by ${d.reasons.join(', ') || 'default deny'}`,
        [A.policyId]: policyHash,
        [A.ruleId]: d.reasons[0],
        'shadowcode.policy.rules': [...d.reasons],
        'shadowcode.action': d.action,
        'shadowcode.decision.id': d.decisionId,
        'shadowcode.principal.kind': d.principal,
        'shadowcode.ceiling': d.ceiling,
        [A.contentIn]: this.content(d.args),
      });
    }
  }

  /** One log record per audit row just committed (the store's listener while this export runs). */
  audited(rows: readonly CommittedAudit[]): void {
    const logger = this.logger;
    if (!logger) return;
    for (const r of rows) {
      let body = r.body;
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(r.body) as Record<string, unknown>;
      } catch {
        parsed = undefined;
      }
      if (!this.o.config.content && parsed && typeof parsed === 'object' && 'args' in parsed) {
        // The arguments a decision recorded are content: the row goes out without them, and its
        // body digest still matches the stored row's.
        const { args: _args, ...rest } = parsed;
        body = JSON.stringify({ ...rest, args_withheld: true });
      }
      logger.emit({
        timestamp: new Date(r.at),
        severityNumber: parsed?.allow === false ? SeverityNumber.WARN : SeverityNumber.INFO,
        severityText: parsed?.allow === false ? 'WARN' : 'INFO',
        eventName: `shadowcode.audit.${r.kind}`,
        body,
        attributes: clean({
          'shadowcode.audit.seq': r.seq,
          'shadowcode.audit.kind': r.kind,
          'shadowcode.audit.at': r.at,
          'shadowcode.audit.prev': r.prev,
          'shadowcode.audit.hash': r.hash,
          'shadowcode.audit.body_sha256': createHash('sha256').update(r.body).digest('hex'),
          'shadowcode.audit.body_complete': body === r.body,
          'shadowcode.decision.id': typeof parsed?.decision_id === 'string' ? parsed.decision_id : undefined,
          'shadowcode.action': typeof parsed?.action === 'string' ? parsed.action : undefined,
        }),
      });
    }
  }

  jobOpened(id: string, kind: 'test' | 'agent', attrs: Attrs): void {
    const parent = context.active();
    const agent = kind === 'agent';
    const span = this.start(agent ? 'invoke_agent shadowcode' : 'job test', SpanKind.INTERNAL, { ...(agent ? { [A.operation]: 'invoke_agent', [A.agentName]: 'shadowcode' } : {}), 'shadowcode.job.id': id, 'shadowcode.job.kind': kind, ...attrs }, parent);
    if (!span) return;
    this.jobs.set(id, { span, ctx: trace.setSpan(parent, span), approvals: new Set() });
  }

  jobAnnotate(id: string, attrs: Attrs): void {
    this.jobs.get(id)?.span.setAttributes(clean(attrs));
  }

  jobClosed(id: string, state: string): void {
    const job = this.jobs.get(id);
    if (!job) return;
    this.jobs.delete(id);
    for (const a of job.approvals) this.approvalClosed({ id: a, state: 'cancelled', decidedBy: null, decidedAt: null });
    job.span.setAttribute('shadowcode.job.state', state);
    if (state === 'failed') {
      job.span.setAttribute(ATTR_ERROR_TYPE, 'job_failed');
      job.span.setStatus({ code: SpanStatusCode.ERROR, message: 'job_failed' });
    }
    job.span.end();
  }

  inJob<T>(id: string, fn: () => T): T {
    const job = this.jobs.get(id);
    return job ? context.with(job.ctx, fn) : fn();
  }

  approvalOpened(a: { id: string; jobId: string; kind: string; createdAt: string }): void {
    const job = this.jobs.get(a.jobId);
    const parent = job?.ctx ?? context.active();
    const created = Date.parse(a.createdAt) || Date.now();
    // A pending approval is the gate's third answer: neither allowed nor denied, escalated to a person.
    this.guardrail(parent, created, created, {
      [A.targetSubtype]: a.kind,
      [A.targetId]: a.id,
      [A.verdict]: 'escalate',
      [A.actionType]: 'escalate',
      [A.verdictReason]: 'an exact approval is required',
      'shadowcode.action': `approval:${a.kind}`,
      'shadowcode.job.id': a.jobId,
    });
    const span = this.start(`approval ${a.kind}`, SpanKind.INTERNAL, { 'shadowcode.approval.id': a.id, 'shadowcode.approval.kind': a.kind, 'shadowcode.job.id': a.jobId }, parent, created);
    if (!span) return;
    this.approvals.set(a.id, { span, jobId: a.jobId, kind: a.kind, createdMs: created });
    job?.approvals.add(a.id);
  }

  approvalClosed(a: { id: string; state: string; decidedBy: string | null; decidedAt: string | null }): void {
    const open = this.approvals.get(a.id);
    if (!open) return;
    this.approvals.delete(a.id);
    this.jobs.get(open.jobId)?.approvals.delete(a.id);
    const end = (a.decidedAt ? Date.parse(a.decidedAt) : NaN) || Date.now();
    const waited = Math.max(0, end - open.createdMs) / 1000;
    open.span.setAttributes(clean({ 'shadowcode.approval.decision': a.state, 'shadowcode.approval.decided_by': a.decidedBy ?? undefined, 'shadowcode.approval.wait_s': waited }));
    open.span.end(end);
    this.meters.wait?.record(waited, { 'shadowcode.approval.decision': a.state, 'shadowcode.approval.kind': open.kind });
  }

  async span<T>(name: string, kind: 'internal' | 'client', attrs: Attrs, fn: (s: SpanHandle) => Promise<T>): Promise<T> {
    const parent = context.active();
    const span = this.start(name, kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL, attrs, parent);
    if (!span) return fn({ set: () => {}, fail: () => {} });
    const handle: SpanHandle = {
      set: (a) => void span.setAttributes(clean(a)),
      fail: (type) => {
        span.setAttribute(ATTR_ERROR_TYPE, type);
        span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      },
    };
    try {
      return await context.with(trace.setSpan(parent, span), () => fn(handle));
    } catch (err) {
      this.failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  track(name: string, attrs: Attrs, done: Promise<Attrs>): void {
    const span = this.start(name, SpanKind.INTERNAL, attrs);
    if (!span) return;
    done.then(
      (a) => span.setAttributes(clean(a)),
      (err) => this.failed(span, err),
    ).finally(() => span.end());
  }

  annotate(attrs: Attrs): void {
    trace.getActiveSpan()?.setAttributes(clean(attrs));
  }

  inject(carrier: Record<string, string>): void {
    this.propagator.inject(context.active(), carrier, defaultTextMapSetter);
  }

  content(value: unknown): string | undefined {
    if (!this.o.config.content || value === undefined) return undefined;
    const clean = this.o.scrub(value);
    const text = typeof clean === 'string' ? clean : JSON.stringify(clean);
    if (text === undefined) return undefined;
    const max = this.o.config.contentChars;
    return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
  }

  counts(): TelemetryCounts {
    const s = this.signals;
    const first = Object.values(this.o.config.targets)[0];
    return {
      pid: process.pid,
      started_at: this.started,
      updated_at: new Date().toISOString(),
      endpoint: first ? new URL(first.url).origin : '',
      traces: { ...s.traces },
      logs: { ...s.logs },
      metrics: { ...s.metrics },
      last_error: s.lastError,
    };
  }

  private writeStats(done?: () => void): void {
    const v = this.signals.traces.exported + this.signals.traces.dropped + this.signals.traces.failed + this.signals.logs.exported + this.signals.logs.dropped + this.signals.logs.failed + this.signals.metrics.exported + this.signals.metrics.failed;
    if (v === this.written && !done) return;
    this.written = v;
    writeCounts(this.o.profileDir, this.counts(), done);
  }

  shutdown(): Promise<{ abandoned: boolean }> {
    this.down ??= (async () => {
      installTelemetry(undefined);
      onAuditCommitted(undefined);
      if (this.statsTimer) clearInterval(this.statsTimer);
      for (const id of [...this.jobs.keys()]) this.jobClosed(id, 'unknown');
      const deadline = Date.now() + this.o.config.shutdownMs;
      let late = false;
      const within = <T>(p: Promise<T>) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const settled = p.then(
          () => true,
          () => true,
        );
        return Promise.race([settled, new Promise<boolean>((r) => (timer = setTimeout(() => r(false), Math.max(0, deadline - Date.now()))))]).then((done) => {
          clearTimeout(timer);
          if (!done) late = true;
        });
      };
      const stuck = await Promise.all([this.parts.spanBatch?.close(deadline), this.parts.logBatch?.close(deadline), this.parts.meterProvider ? within(this.parts.meterProvider.shutdown()) : undefined]);
      await within(Promise.all([this.parts.tracerProvider?.shutdown(), this.parts.loggerProvider?.shutdown()]));
      if (this.parts.ownsContext) context.disable();
      await new Promise<void>((r) => this.writeStats(r));
      return { abandoned: late || stuck.some((s) => s === true) };
    })();
    return this.down;
  }
}

/** Starts export as configured and installs it behind tel(); the gate decided cli:telemetry.export. */
export async function startSdk(ticket: GateTicket, o: StartOptions): Promise<Telemetry> {
  assertTicket(ticket, 'cli:telemetry.export');
  const c = o.config;
  const signals = new Signals();
  const onError = (err: Error) => {
    signals.lastError = String(err?.message ?? err).replace(/\s+/g, ' ').slice(0, 200);
  };
  const resource = defaultResource().merge(
    resourceFromAttributes({
      ...c.resource,
      [ATTR_SERVICE_NAME]: c.serviceName,
      [ATTR_SERVICE_VERSION]: o.version,
      'service.instance.id': randomUUID(),
      'process.pid': process.pid,
      'shadowcode.role': o.role,
    }),
  );
  const ownsContext = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

  let tracerProvider: TracerProvider | undefined;
  let spanBatch: BoundedBatch<ReadableSpan> | undefined;
  let tracer: Tracer | undefined;
  if (c.targets.traces) {
    const exporter = exporterFor('traces', c.targets.traces) as ItemExporter<ReadableSpan>;
    spanBatch = new BoundedBatch(exporter, c.spans, signals.traces, onError);
    tracerProvider = new TracerProvider({ resource, spanProcessors: [new SpanQueue(spanBatch)] });
    tracer = tracerProvider.getTracer('shadowcode', o.version);
  }
  let loggerProvider: LoggerProvider | undefined;
  let logBatch: BoundedBatch<ReadableLogRecord> | undefined;
  let logger: Logger | undefined;
  if (c.targets.logs) {
    const exporter = exporterFor('logs', c.targets.logs) as ItemExporter<ReadableLogRecord>;
    logBatch = new BoundedBatch(exporter, c.logs, signals.logs, onError);
    loggerProvider = new LoggerProvider({ resource, processors: [new LogQueue(logBatch)] });
    logger = loggerProvider.getLogger('shadowcode.audit', o.version);
  }
  let meterProvider: MeterProvider | undefined;
  const meters: { server?: Histogram; client?: Histogram; wait?: Histogram; decisions?: Counter } = {};
  if (c.targets.metrics) {
    const exporter = countingMetrics(exporterFor('metrics', c.targets.metrics) as PushMetricExporter, signals.metrics, onError);
    meterProvider = new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: c.metricIntervalMs, exportTimeoutMillis: c.metricTimeoutMs })] });
    const meter = meterProvider.getMeter('shadowcode', o.version);
    meters.server = meter.createHistogram('mcp.server.operation.duration', { unit: 's', description: 'MCP request duration as observed on the receiver from the time it was received until the result is sent.', advice: { explicitBucketBoundaries: MCP_BUCKETS } });
    meters.client = meter.createHistogram('mcp.client.operation.duration', { unit: 's', description: 'The duration of an MCP request as observed on the sender, from the time it was sent until the response is received.', advice: { explicitBucketBoundaries: MCP_BUCKETS } });
    meters.wait = meter.createHistogram('shadowcode.approval.wait.duration', { unit: 's', description: 'How long an approval waited for a person to decide it.', advice: { explicitBucketBoundaries: WAIT_BUCKETS } });
    meters.decisions = meter.createCounter('shadowcode.gate.decisions', { unit: '{decision}', description: 'Policy decisions, by verdict (allow, deny, escalate) and action.' });
  }
  const sdk = new Sdk(o, tracer, logger, { tracerProvider, loggerProvider, meterProvider, spanBatch, logBatch, ownsContext }, signals, meters);
  if (logger) onAuditCommitted((rows) => sdk.audited(rows));
  installTelemetry(sdk);
  return sdk;
}
