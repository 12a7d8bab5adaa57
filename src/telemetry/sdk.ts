/*
 * The OpenTelemetry export of one process. Loaded only when telemetry is configured
 * (ops/telemetry.ts imports it dynamically); it imports nothing of OpenTelemetry itself.
 *
 *   startSdk(ticket cli:telemetry.export, config) ─► installTelemetry(this): the hooks report
 *
 *   on a call's path (what a call pays, and all it pays):
 *     a span    ─► a SpanRec: ids from a pool of random bytes, the attributes at hand, times;
 *                  the context (AsyncLocalStorage) makes it the parent of what the call does
 *                  (gate decisions, jobs, model requests, spawns); at its end, pushed to a queue
 *     an audit row committed ─► a LogRec (the row and the active span) pushed to a queue
 *     a measurement          ─► a MetricRec pushed to a list
 *   off the call's path (an unreferenced timer, schedule_ms after the first item, or at once for a
 *   full batch):
 *     encode.ts (loaded with the export, the packages from dist/otel.cjs) ─► records to OTLP
 *     requests, measurements to the meters ─► otlp-http.ts ─► the collector, one batch at a time,
 *     leaving a collector that failed alone for a growing back-off
 *   shutdown() ─► queued items sent within limits.telemetry.shutdown_ms, the rest dropped and counted
 *
 * Names follow the OpenTelemetry GenAI and MCP semantic conventions (docs/telemetry.md lists
 * every span and attribute). Nothing sensitive leaves by default: tool arguments and results,
 * prompts and model text only under the profile's content opt-in, and then scrubbed of
 * secrets (when the span is sent). A W3C traceparent in a request's params._meta makes the
 * caller's span the parent.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync, randomUUID } from 'node:crypto';
import { type CommittedAudit, onAuditCommitted } from '../store/audit.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { BoundedBatch, type SendOutcome } from './batch.js';
import type { ExportConfig, SignalTarget } from './config.js';
import type { Encoder } from './encode.js';
import { type Attrs, type GateDecided, installTelemetry, type McpRequestInfo, type SignalCounts, type SpanHandle, type Telemetry, type TelemetryCounts } from './hooks.js';
import { type Collector, type CollectorOf, openCollectors } from './otlp-http.js';
import { KIND, type Kind, type LogRec, METER, type Meter, type MetricRec, parseTraceparent, type SpanRec, traceparentOf, tracestate } from './records.js';
import { writeCounts } from './stats.js';

export interface StartOptions {
  readonly config: ExportConfig;
  readonly profileDir: string;
  readonly version: string;
  /** What this process is (mcp-serve, engine, run, library, cli), as shadowcode.role on the resource. */
  readonly role: string;
  /** The secret scrubber (src/policy/scrub.ts): content passes it before it leaves. */
  readonly scrub: (value: unknown) => unknown;
  /** Record the counts (telemetry/PID.json) only if something was lost: a short CLI command's export, one of many. */
  readonly countsOnLossOnly?: boolean;
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
  agentName: 'gen_ai.agent.name',
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
  // The stable ones (@opentelemetry/semantic-conventions), spelled here so that recording loads no package.
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
} as const;

const GATE = 'shadowcode-policy';

function errorType(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown };
  if (typeof e?.code === 'string' || typeof e?.code === 'number') return String(e.code);
  return typeof e?.name === 'string' && e.name ? e.name : '_OTHER';
}

/** Epoch milliseconds, fractional, as OpenTelemetry's SDK reads its clock. */
const now = () => performance.timeOrigin + performance.now();

// Span and trace ids from a pool of random bytes refilled 4 KiB at a time: one crypto call per
// ~300 spans instead of one per id.
const pool = Buffer.allocUnsafe(4096);
let poolAt = pool.length;
const ZERO = { 8: '0'.repeat(16), 16: '0'.repeat(32) };
function hexId(bytes: 8 | 16): string {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const id = pool.toString('hex', poolAt, (poolAt += bytes));
  return id === ZERO[bytes] ? hexId(bytes) : id;
}

interface OpenJob {
  readonly span: SpanRec;
  readonly approvals: Set<string>;
}

interface OpenApproval {
  readonly span: SpanRec;
  readonly jobId: string;
  readonly kind: string;
  readonly createdMs: number;
}

class Sdk implements Telemetry {
  private readonly als = new AsyncLocalStorage<SpanRec>();
  private readonly jobs = new Map<string, OpenJob>();
  private readonly approvals = new Map<string, OpenApproval>();
  private readonly started = new Date().toISOString();
  private readonly traces = { exported: 0, dropped: 0, failed: 0 };
  private readonly logs = { exported: 0, dropped: 0, failed: 0 };
  private readonly metrics = { exported: 0, dropped: 0, failed: 0 };
  private lastError: string | null = null;
  private readonly spanBatch: BoundedBatch<SpanRec> | undefined;
  private readonly logBatch: BoundedBatch<LogRec> | undefined;
  private readonly collectorOf: CollectorOf;
  private measures: MetricRec[] = [];
  private measureTimer: NodeJS.Timeout | undefined;
  private encoder: Promise<Encoder> | undefined;
  private readonly instance = randomUUID();
  private statsTimer: NodeJS.Timeout | undefined;
  private written = -1;
  private down: Promise<{ abandoned: boolean }> | undefined;

  constructor(
    private readonly o: StartOptions,
    collectorOf: CollectorOf,
  ) {
    const c = o.config;
    this.collectorOf = collectorOf;
    const onError = (message: string) => {
      this.lastError = message.replace(/\s+/g, ' ').slice(0, 200);
    };
    const traces = c.targets.traces;
    if (traces) {
      const collector = this.collectorOf(traces);
      this.spanBatch = new BoundedBatch<SpanRec>((items, last) => this.send(traces, collector, items, last, (e) => e.spans(items, traces.protocol)), { ...c.spans, retries: c.batchRetries }, this.traces, onError, () => collector.waiting());
    }
    const logs = c.targets.logs;
    if (logs) {
      const collector = this.collectorOf(logs);
      this.logBatch = new BoundedBatch<LogRec>((items, last) => this.send(logs, collector, items, last, (e) => e.logs(items, logs.protocol)), { ...c.logs, retries: c.batchRetries }, this.logs, onError, () => collector.waiting());
    }
  }

  /** Loads the OpenTelemetry side, then starts recording the counters (startSdk waits for it; a failure leaves nothing running). */
  async ready(): Promise<void> {
    await this.encode();
    this.statsTimer = setInterval(() => this.writeStats(), this.o.config.statsWriteMs);
    this.statsTimer.unref();
  }

  /** The OpenTelemetry side: encode.ts and the packages (dist/otel.cjs). */
  private encode(): Promise<Encoder> {
    this.encoder ??= import('./encode.js').then(
      (m) =>
        new m.Encoder({
          config: this.o.config,
          version: this.o.version,
          resource: { 'service.name': this.o.config.serviceName, 'service.version': this.o.version, 'service.instance.id': this.instance, 'process.pid': process.pid, 'shadowcode.role': this.o.role },
          collector: this.collectorOf,
          metricCounts: this.metrics,
          onError: (message) => {
            this.lastError = message.replace(/\s+/g, ' ').slice(0, 200);
          },
        }),
    );
    return this.encoder;
  }

  /** Encoded batches a collector could not take yet, kept for their next attempt (the batch holds them, by identity). */
  private readonly encoded = new WeakMap<object, Uint8Array>();

  private async send(target: SignalTarget, collector: Collector, items: object, last: boolean, encode: (e: Encoder) => Uint8Array | undefined): Promise<SendOutcome> {
    let body = this.encoded.get(items);
    if (!body) {
      body = encode(await this.encode());
      if (!body) return { ok: false, retry: false, error: 'the batch could not be encoded' };
    }
    const r = await collector.post(target, body, last);
    if (!r.ok && r.retry) this.encoded.set(items, body);
    return r;
  }

  // ─── recording: what a call pays ─────────────────────────────────────────────────────────

  private open(name: string, kind: Kind, attrs: Attrs, parent: SpanRec | undefined, start = now(), mcp = false): SpanRec {
    return { name, kind, traceId: parent?.traceId ?? hexId(16), spanId: hexId(8), parentId: parent?.spanId, remoteParent: parent?.remote ?? false, sampled: parent?.sampled ?? true, traceState: parent?.traceState, start, end: 0, attrs, more: undefined, error: undefined, mcp, remote: false };
  }

  /** Another process's span from its W3C trace context, to parent ours; undefined when the context is not one. */
  private remoteSpan(traceparent: unknown, tracestate: unknown): SpanRec | undefined {
    const p = typeof traceparent === 'string' ? parseTraceparent(traceparent) : undefined;
    if (!p) return undefined;
    return { name: '', kind: KIND.internal, traceId: p.traceId, spanId: p.spanId, parentId: undefined, remoteParent: false, sampled: p.sampled, traceState: typeof tracestate === 'string' ? tracestate : undefined, start: 0, end: 0, attrs: {}, more: undefined, error: undefined, mcp: false, remote: true };
  }

  private close(s: SpanRec, end = now()): void {
    s.end = end;
    if (s.sampled) this.spanBatch?.push(s);
  }

  private measure(meter: Meter, value: number, attrs: Attrs): void {
    if (!this.o.config.targets.metrics) return;
    if (this.measures.length >= this.o.config.spans.queueItems) {
      this.metrics.dropped++;
      return;
    }
    this.measures.push({ meter, value, attrs });
    if (!this.measureTimer) {
      this.measureTimer = setTimeout(() => this.applyMeasures(), this.o.config.spans.scheduleMs);
      this.measureTimer.unref();
    }
  }

  private applyMeasures(): Promise<void> {
    this.measureTimer = undefined;
    return this.encode().then(
      (e) => e.measure(this.measures.splice(0)),
      (err: Error) => {
        this.metrics.failed += this.measures.splice(0).length;
        this.lastError = String(err?.message ?? err).slice(0, 200);
      },
    );
  }

  /** Attributes added only when the span is sent (content, which the scrubber reads then). */
  private later(s: SpanRec, f: () => Attrs): void {
    const prev = s.more;
    s.more = prev ? () => ({ ...prev(), ...f() }) : f;
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
      [A.serverAddress]: info.server?.address,
      [A.serverPort]: info.server?.port,
    };
  }

  private argsLater(s: SpanRec, info: McpRequestInfo): void {
    if (this.o.config.content && info.method === 'tools/call' && info.args !== undefined) this.later(s, () => ({ [A.toolArgs]: this.content(info.args) }));
  }

  /** error.type and the result's content, from what an MCP handler returned. */
  private resultAttrs(span: SpanRec, r: unknown): string | undefined {
    const res = r as { isError?: unknown; structuredContent?: { error?: { code?: unknown } } } | undefined;
    if (res && typeof res === 'object' && res.isError === true) {
      const code = res.structuredContent?.error?.code;
      span.attrs[A.errorType] = 'tool_error';
      if (typeof code === 'string') span.attrs['shadowcode.error.code'] = code;
      span.error = typeof code === 'string' ? code : 'tool_error';
      return 'tool_error';
    }
    if (this.o.config.content) {
      const out = (r as { structuredContent?: unknown } | undefined)?.structuredContent;
      if (out !== undefined) this.later(span, () => ({ [A.toolResult]: this.content(out) }));
    }
    return undefined;
  }

  private failed(span: SpanRec, err: unknown): string {
    const type = errorType(err);
    // The type only: an error's message can hold a path or an argument.
    span.attrs[A.errorType] = type;
    span.error = type;
    return type;
  }

  private metricAttrs(info: McpRequestInfo, error: string | undefined): Attrs {
    const tool = info.method === 'tools/call';
    return { [A.mcpMethod]: info.method, [A.toolName]: tool ? info.target : undefined, [A.operation]: tool ? 'execute_tool' : undefined, [A.transport]: info.transport, [A.mcpProtocol]: info.protocolVersion, [A.errorType]: error };
  }

  async mcpRequest<T>(info: McpRequestInfo, fn: () => Promise<T>): Promise<T> {
    const active = this.als.getStore();
    if (active?.mcp && active.end === 0) {
      // Opened by the HTTP gateway for this request: the handler adds what only it knows.
      if (info.protocolVersion !== undefined) active.attrs[A.mcpProtocol] = info.protocolVersion;
      this.argsLater(active, info);
      try {
        const r = await fn();
        this.resultAttrs(active, r);
        return r;
      } catch (err) {
        this.failed(active, err);
        throw err;
      }
    }
    const m = info.meta as Record<string, unknown> | undefined;
    // The caller's span (params._meta.traceparent) is the parent, else whatever is active.
    const parent = (m && typeof m === 'object' ? this.remoteSpan(m.traceparent, m.tracestate) : undefined) ?? active;
    const span = this.open(info.target ? `${info.method} ${info.target}` : info.method, KIND.server, this.mcpAttrs(info), parent, now(), true);
    this.argsLater(span, info);
    const t0 = performance.now();
    let error: string | undefined;
    try {
      const r = await this.als.run(span, fn);
      error = this.resultAttrs(span, r);
      return r;
    } catch (err) {
      error = this.failed(span, err);
      throw err;
    } finally {
      this.close(span);
      this.measure(METER.server, (performance.now() - t0) / 1000, this.metricAttrs(info, error));
    }
  }

  async mcpClient<T>(info: McpRequestInfo, fn: (meta: Record<string, string>) => Promise<T>): Promise<T> {
    const span = this.open(info.target ? `${info.method} ${info.target}` : info.method, KIND.client, this.mcpAttrs(info), this.als.getStore());
    this.argsLater(span, info);
    const meta: Record<string, string> = {};
    this.injectFrom(span, meta);
    const t0 = performance.now();
    let error: string | undefined;
    try {
      const r = await this.als.run(span, () => fn(meta));
      error = this.resultAttrs(span, r);
      return r;
    } catch (err) {
      error = this.failed(span, err);
      throw err;
    } finally {
      this.close(span);
      this.measure(METER.client, (performance.now() - t0) / 1000, this.metricAttrs(info, error));
    }
  }

  /** A guardrail span of one verdict, its attributes built when it is sent. */
  private guardrail(parent: SpanRec | undefined, startMs: number, endMs: number, verdict: string, action: string, attrs: () => Attrs): void {
    const s = this.open(`run_guardrail ${GATE}`, KIND.internal, {}, parent, startMs);
    s.more = () => ({ [A.operation]: 'run_guardrail', [A.component]: GATE, [A.targetType]: 'input', [A.verdict]: verdict, 'shadowcode.action': action, ...attrs() });
    this.close(s, endMs);
    this.measure(METER.decisions, 1, { [A.verdict]: verdict, 'shadowcode.action': action });
  }

  decided(list: readonly GateDecided[], policyHash: string, startedMs: number): void {
    const end = Date.now();
    const parent = this.als.getStore();
    for (const d of list) {
      // Only what the span needs is kept until it is sent: a queued span must not hold a call's
      // raw input, so the arguments are kept only when content is exported.
      const { action, allow, decisionId, principal, ceiling } = d;
      const reasons = [...d.reasons];
      const args = this.o.config.content ? d.args : undefined;
      this.guardrail(parent, startedMs, end, allow ? 'allow' : 'deny', action, () => {
        const family = action.split(':')[0] ?? action;
        return {
          [A.targetSubtype]: family === 'tool' || action === 'mcp:call' ? 'tool_call' : action === 'model:request' ? 'llm' : family,
          [A.targetId]: decisionId,
          [A.actionType]: allow ? 'allow' : 'block',
          [A.verdictReason]: allow ? undefined : `denied by ${reasons.join(', ') || 'default deny'}`,
          [A.policyId]: policyHash,
          [A.ruleId]: reasons[0],
          'shadowcode.policy.rules': reasons,
          'shadowcode.decision.id': decisionId,
          'shadowcode.principal.kind': principal,
          'shadowcode.ceiling': ceiling,
          [A.contentIn]: args === undefined ? undefined : this.content(args),
        };
      });
    }
  }

  /** One log record per audit row just committed (the store's listener while this export runs), in commit order. */
  audited(rows: readonly CommittedAudit[]): void {
    const batch = this.logBatch;
    if (!batch) return;
    const span = this.als.getStore();
    const observed = Date.now();
    for (const row of rows) batch.push({ row, span, observed });
  }

  jobOpened(id: string, kind: 'test' | 'agent', attrs: Attrs): void {
    const agent = kind === 'agent';
    const span = this.open(agent ? 'invoke_agent shadowcode' : 'job test', KIND.internal, { ...(agent ? { [A.operation]: 'invoke_agent', [A.agentName]: 'shadowcode' } : {}), 'shadowcode.job.id': id, 'shadowcode.job.kind': kind, ...attrs }, this.als.getStore());
    this.jobs.set(id, { span, approvals: new Set() });
  }

  jobAnnotate(id: string, attrs: Attrs): void {
    const job = this.jobs.get(id);
    if (job) Object.assign(job.span.attrs, attrs);
  }

  jobClosed(id: string, state: string): void {
    const job = this.jobs.get(id);
    if (!job) return;
    this.jobs.delete(id);
    for (const a of job.approvals) this.approvalClosed({ id: a, state: 'cancelled', decidedBy: null, decidedAt: null });
    job.span.attrs['shadowcode.job.state'] = state;
    if (state === 'failed') {
      job.span.attrs[A.errorType] = 'job_failed';
      job.span.error = 'job_failed';
    }
    this.close(job.span);
  }

  inJob<T>(id: string, fn: () => T): T {
    const job = this.jobs.get(id);
    return job ? this.als.run(job.span, fn) : fn();
  }

  approvalOpened(a: { id: string; jobId: string; kind: string; createdAt: string }): void {
    const job = this.jobs.get(a.jobId);
    const parent = job?.span ?? this.als.getStore();
    const created = Date.parse(a.createdAt) || Date.now();
    // A pending approval is the gate's third answer: neither allowed nor denied, escalated to a person.
    this.guardrail(parent, created, created, 'escalate', `approval:${a.kind}`, () => ({
      [A.targetSubtype]: a.kind,
      [A.targetId]: a.id,
      [A.actionType]: 'escalate',
      [A.verdictReason]: 'an exact approval is required',
      'shadowcode.job.id': a.jobId,
    }));
    const span = this.open(`approval ${a.kind}`, KIND.internal, { 'shadowcode.approval.id': a.id, 'shadowcode.approval.kind': a.kind, 'shadowcode.job.id': a.jobId }, parent, created);
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
    Object.assign(open.span.attrs, { 'shadowcode.approval.decision': a.state, 'shadowcode.approval.decided_by': a.decidedBy ?? undefined, 'shadowcode.approval.wait_s': waited });
    this.close(open.span, end);
    this.measure(METER.wait, waited, { 'shadowcode.approval.decision': a.state, 'shadowcode.approval.kind': open.kind });
  }

  async span<T>(name: string, kind: 'internal' | 'client', attrs: Attrs, fn: (s: SpanHandle) => Promise<T>): Promise<T> {
    const span = this.open(name, kind === 'client' ? KIND.client : KIND.internal, attrs, this.als.getStore());
    const handle: SpanHandle = {
      set: (a) => void Object.assign(span.attrs, a),
      fail: (type) => {
        span.attrs[A.errorType] = type;
        span.error = type;
      },
    };
    try {
      return await this.als.run(span, () => fn(handle));
    } catch (err) {
      this.failed(span, err);
      throw err;
    } finally {
      this.close(span);
    }
  }

  track(name: string, attrs: Attrs, done: Promise<Attrs>): void {
    const span = this.open(name, KIND.internal, attrs, this.als.getStore());
    done
      .then(
        (a) => void Object.assign(span.attrs, a),
        (err) => void this.failed(span, err),
      )
      .finally(() => this.close(span));
  }

  annotate(attrs: Attrs): void {
    const span = this.als.getStore();
    if (span) Object.assign(span.attrs, attrs);
  }

  withParent<T>(context: { readonly traceparent?: string | undefined; readonly tracestate?: string | undefined }, fn: () => T): T {
    const parent = this.remoteSpan(context.traceparent, context.tracestate);
    return parent ? this.als.run(parent, fn) : fn();
  }

  private injectFrom(span: SpanRec | undefined, carrier: Record<string, string>): void {
    if (!span) return;
    carrier.traceparent = traceparentOf(span);
    const state = tracestate(span.traceState);
    if (state) carrier.tracestate = state;
  }

  inject(carrier: Record<string, string>): void {
    this.injectFrom(this.als.getStore(), carrier);
  }

  content(value: unknown): string | undefined {
    if (!this.o.config.content || value === undefined) return undefined;
    const clean = this.o.scrub(value);
    const text = typeof clean === 'string' ? clean : JSON.stringify(clean);
    if (text === undefined) return undefined;
    const max = this.o.config.contentChars;
    return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
  }

  // ─── counting and stopping ──────────────────────────────────────────────────────────────

  counts(): TelemetryCounts {
    const first = Object.values(this.o.config.targets)[0];
    return {
      pid: process.pid,
      started_at: this.started,
      updated_at: new Date().toISOString(),
      endpoint: first ? new URL(first.url).origin : '',
      traces: { ...this.traces },
      logs: { ...this.logs },
      metrics: { ...this.metrics },
      last_error: this.lastError,
    };
  }

  private writeStats(done?: () => void): void {
    if (this.o.countsOnLossOnly && this.traces.dropped + this.traces.failed + this.logs.dropped + this.logs.failed + this.metrics.dropped + this.metrics.failed === 0) return done?.();
    const sum = (c: SignalCounts) => c.exported + c.dropped + c.failed;
    const v = sum(this.traces) + sum(this.logs) + sum(this.metrics);
    if (v === this.written && !done) return;
    this.written = v;
    writeCounts(this.o.profileDir, this.counts(), done);
  }

  shutdown(): Promise<{ abandoned: boolean }> {
    this.down ??= (async () => {
      installTelemetry(undefined);
      onAuditCommitted(undefined);
      if (this.statsTimer) clearInterval(this.statsTimer);
      if (this.measureTimer) clearTimeout(this.measureTimer);
      for (const id of [...this.jobs.keys()]) this.jobClosed(id, 'unknown');
      const deadline = Date.now() + this.o.config.shutdownMs;
      let late = false;
      const within = (p: Promise<unknown>) => {
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
      // What was measured goes to the meters, which send once more.
      const metrics = this.o.config.targets.metrics ? within(this.applyMeasures().then(() => this.encode()).then((e) => e.shutdownMetrics())) : undefined;
      const stuck = await Promise.all([this.spanBatch?.close(deadline), this.logBatch?.close(deadline), metrics]);
      this.als.disable();
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
  const sdk = new Sdk(o, openCollectors(ticket, { retryMinMs: c.backoffMinMs, retryMaxMs: c.backoffMaxMs, userAgent: `shadowcode/${o.version}` }));
  // The OpenTelemetry side loads now, with the process, rather than at the first export, where it
  // would hold up whatever call came in at that moment; a failure to load is a failure to start.
  await sdk.ready();
  if (o.config.targets.logs) onAuditCommitted((rows) => sdk.audited(rows));
  else onAuditCommitted(undefined);
  installTelemetry(sdk);
  return sdk;
}
