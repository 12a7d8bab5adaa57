/*
 * The OpenTelemetry side of the export: what the recorder (sdk.ts) queued, turned into OTLP
 * requests. Loaded when an export starts (sdk.ts imports it dynamically, with the packages in
 * dist/otel.cjs: otel-packages.ts), never while telemetry is off; it runs from the export timer,
 * never on a call's path.
 *
 *   spans(SpanRec[])  ─► the ReadableSpan shape ─► OTLP ExportTraceServiceRequest (protobuf or JSON)
 *   logs(LogRec[])    ─► one log record per audit row ─► OTLP ExportLogsServiceRequest
 *   metrics           ─► MeterProvider (durations, waits, decisions) ─► periodic reader ─► our
 *                        exporter ─► the same collector, skipped while it is being left alone
 *
 * The encoders are the official ones (@opentelemetry/otlp-transformer, what the OTLP exporters
 * use); the POST is ours (otlp-http.ts), for its back-off.
 */
import type { Counter, Histogram, HrTime, SpanContext, TraceState } from '@opentelemetry/api';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { Resource } from '@opentelemetry/resources';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { createHash } from 'node:crypto';
import type { ExportConfig, SignalTarget } from './config.js';
import type { SignalCounts } from './hooks.js';
import type { CollectorOf } from './otlp-http.js';
import { defaultResource, JsonLogsSerializer, JsonMetricsSerializer, JsonTraceSerializer, MeterProvider, PeriodicExportingMetricReader, ProtobufLogsSerializer, ProtobufMetricsSerializer, ProtobufTraceSerializer, resourceFromAttributes } from './otel-packages.js';
import { definedAttrs, finalAttrs, hrTime, type LogRec, type MetricRec, type SpanRec, tracestate } from './records.js';

/** The conventions' bucket boundaries for MCP operation durations, in seconds. */
const MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** Approvals wait for a person: seconds to an hour. */
const WAIT_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** OpenTelemetry's severity numbers. */
const INFO = 9;
const WARN = 13;

export interface EncoderOptions {
  readonly config: ExportConfig;
  readonly version: string;
  readonly resource: Record<string, string | number>;
  readonly collector: CollectorOf;
  readonly metricCounts: SignalCounts;
  readonly onError: (message: string) => void;
}

const withTraceState = (raw: string | undefined): TraceState | undefined => {
  const v = tracestate(raw);
  return v === undefined ? undefined : ({ serialize: () => v } as unknown as TraceState);
};

export class Encoder {
  private readonly resource: Resource;
  private readonly scope: { name: string; version: string };
  private readonly logScope: { name: string; version: string };
  private readonly meterProvider: MeterProvider | undefined;
  private readonly meters: Array<Histogram | Counter> = [];

  constructor(private readonly o: EncoderOptions) {
    const c = o.config;
    this.resource = defaultResource().merge(resourceFromAttributes({ ...c.resource, ...o.resource }));
    this.scope = { name: 'shadowcode', version: o.version };
    this.logScope = { name: 'shadowcode.audit', version: o.version };
    const target = c.targets.metrics;
    if (target) {
      this.meterProvider = new MeterProvider({ resource: this.resource, readers: [new PeriodicExportingMetricReader({ exporter: this.metricExporter(target), exportIntervalMillis: c.metricIntervalMs, exportTimeoutMillis: c.metricTimeoutMs })] });
      const meter = this.meterProvider.getMeter('shadowcode', o.version);
      // In METER order: server, client, wait, decisions.
      this.meters.push(
        meter.createHistogram('mcp.server.operation.duration', { unit: 's', description: 'MCP request duration as observed on the receiver from the time it was received until the result is sent.', advice: { explicitBucketBoundaries: MCP_BUCKETS } }),
        meter.createHistogram('mcp.client.operation.duration', { unit: 's', description: 'The duration of an MCP request as observed on the sender, from the time it was sent until the response is received.', advice: { explicitBucketBoundaries: MCP_BUCKETS } }),
        meter.createHistogram('shadowcode.approval.wait.duration', { unit: 's', description: 'How long an approval waited for a person to decide it.', advice: { explicitBucketBoundaries: WAIT_BUCKETS } }),
        meter.createCounter('shadowcode.gate.decisions', { unit: '{decision}', description: 'Policy decisions, by verdict (allow, deny, escalate) and action.' }),
      );
    }
  }

  /** Measurements recorded on calls' paths, applied to the meters now. */
  measure(list: readonly MetricRec[]): void {
    for (const m of list) {
      const meter = this.meters[m.meter];
      if (!meter) continue;
      const attrs = definedAttrs(m.attrs);
      if ('record' in meter) meter.record(m.value, attrs);
      else meter.add(m.value, attrs);
    }
  }

  spans(list: readonly SpanRec[], protocol: SignalTarget['protocol']): Uint8Array | undefined {
    const spans = list.map((s) => this.readableSpan(s));
    return protocol === 'http/json' ? JsonTraceSerializer.serializeRequest(spans) : ProtobufTraceSerializer.serializeRequest(spans);
  }

  private readableSpan(s: SpanRec): ReadableSpan {
    const traceFlags = s.sampled ? 1 : 0;
    const context: SpanContext = { traceId: s.traceId, spanId: s.spanId, traceFlags, ...(s.traceState ? { traceState: withTraceState(s.traceState) } : {}) };
    const startTime = hrTime(s.start);
    const endTime = hrTime(s.end);
    return {
      name: s.name,
      kind: s.kind,
      spanContext: () => context,
      parentSpanContext: s.parentId ? { traceId: s.traceId, spanId: s.parentId, traceFlags, isRemote: s.remoteParent } : undefined,
      startTime,
      endTime,
      duration: hrTime(s.end - s.start) as HrTime,
      status: s.error === undefined ? { code: 0 } : { code: 2, message: s.error },
      attributes: finalAttrs(s),
      links: [],
      events: [],
      ended: true,
      resource: this.resource,
      instrumentationScope: this.scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  }

  logs(list: readonly LogRec[], protocol: SignalTarget['protocol']): Uint8Array | undefined {
    const records = list.map((l) => this.logRecord(l));
    return protocol === 'http/json' ? JsonLogsSerializer.serializeRequest(records) : ProtobufLogsSerializer.serializeRequest(records);
  }

  /** One audit row: its place in the hash chain exactly as stored, its body without recorded arguments unless content is opted in. */
  private logRecord({ row: r, span, observed }: LogRec): ReadableLogRecord {
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
    const denied = parsed?.allow === false;
    return {
      hrTime: hrTime(Date.parse(r.at) || observed),
      hrTimeObserved: hrTime(observed),
      severityNumber: denied ? WARN : INFO,
      severityText: denied ? 'WARN' : 'INFO',
      eventName: `shadowcode.audit.${r.kind}`,
      body,
      attributes: definedAttrs({
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
      droppedAttributesCount: 0,
      ...(span ? { spanContext: { traceId: span.traceId, spanId: span.spanId, traceFlags: span.sampled ? 1 : 0 } } : {}),
      resource: this.resource,
      instrumentationScope: this.logScope,
    } as ReadableLogRecord;
  }

  /** Metrics go to the same collector as the rest, and are not sent while it is being left alone (cumulative: the next export carries them). */
  private metricExporter(target: SignalTarget): PushMetricExporter {
    const collector = this.o.collector(target);
    const counts = this.o.metricCounts;
    let sending: Promise<unknown> = Promise.resolve();
    return {
      export: (metrics: ResourceMetrics, done) => {
        if (!this.finalMetrics && collector.waiting() > 0) {
          counts.dropped++;
          return done({ code: 1 });
        }
        let body: Uint8Array | undefined;
        try {
          body = target.protocol === 'http/json' ? JsonMetricsSerializer.serializeRequest(metrics) : ProtobufMetricsSerializer.serializeRequest(metrics);
        } catch (err) {
          this.o.onError((err as Error).message);
        }
        if (!body) {
          counts.failed++;
          return done({ code: 1 });
        }
        sending = collector.post(target, body, this.finalMetrics).then((r) => {
          if (r.ok) counts.exported++;
          else {
            counts.failed++;
            this.o.onError(r.error);
          }
          done({ code: r.ok ? 0 : 1 });
        });
      },
      forceFlush: () => sending.then(() => {}),
      shutdown: () => sending.then(() => {}),
    };
  }

  /** The shutdown's export: made even to a collector being left alone. */
  private finalMetrics = false;

  /** Sends the metrics once more and stops the meters. */
  async shutdownMetrics(): Promise<void> {
    if (!this.meterProvider) return;
    this.finalMetrics = true;
    await this.meterProvider.shutdown();
  }
}
