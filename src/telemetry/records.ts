/*
 * What a call records for export: plain data, built in a few property writes on the call's
 * path. Turning it into OpenTelemetry's shapes, encoding and sending happen later, off the
 * call's path (src/telemetry/encode.ts, from the export timer).
 *
 *   SpanRec    one span: ids, parent, times, the attributes known so far, and `more` (attributes
 *              worth computing only if the span is sent: scrubbed content, a decision's details)
 *   LogRec     one committed audit row and the span it was committed in
 *   MetricRec  one measurement, applied to the meters from the export timer
 *
 * This module imports nothing of OpenTelemetry.
 */
import type { CommittedAudit } from '../store/audit.js';
import type { Attrs } from './hooks.js';

/** OpenTelemetry's SpanKind numbers. */
export const KIND = { internal: 0, server: 1, client: 2 } as const;
export type Kind = (typeof KIND)[keyof typeof KIND];

export interface SpanRec {
  readonly name: string;
  readonly kind: Kind;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId: string | undefined;
  /** The parent came from another process (a caller's traceparent). */
  readonly remoteParent: boolean;
  /** Recorded for export: the caller's traceparent may say not to (flags 00), and children follow it. */
  readonly sampled: boolean;
  /** The W3C tracestate as received, checked when it is sent on (tracestate()). */
  readonly traceState: string | undefined;
  /** Epoch milliseconds, fractional. */
  readonly start: number;
  end: number;
  /** Attributes known so far; undefined values are left out at export. */
  attrs: Attrs;
  /** Attributes computed only when the span is sent. */
  more: (() => Attrs) | undefined;
  /** Status ERROR with this message (a low-cardinality type), when set. */
  error: string | undefined;
  /** The SERVER span of an MCP request (a nested mcpRequest() completes it instead of opening another). */
  readonly mcp: boolean;
  /** Another process's span, standing in as the parent of ours: never ended, never sent. */
  readonly remote: boolean;
}

export interface LogRec {
  readonly row: CommittedAudit;
  /** The span active when the row was committed (a call's, a job's), if any. */
  readonly span: SpanRec | undefined;
  /** Epoch ms when the row was handed over. */
  readonly observed: number;
}

/** Which meter a measurement goes to. */
export const METER = { server: 0, client: 1, wait: 2, decisions: 3 } as const;
export type Meter = (typeof METER)[keyof typeof METER];

export interface MetricRec {
  readonly meter: Meter;
  readonly value: number;
  readonly attrs: Attrs;
}

/** A span's attributes as sent: `more` added, undefined values left out. */
export function finalAttrs(s: SpanRec): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  const all = s.more ? { ...s.attrs, ...s.more() } : s.attrs;
  for (const k in all) {
    const v = all[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

export function definedAttrs(a: Attrs): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const k in a) {
    const v = a[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** Epoch ms to OpenTelemetry's [seconds, nanoseconds]. */
export function hrTime(ms: number): [number, number] {
  const s = Math.floor(ms / 1000);
  return [s, Math.min(999_999_999, Math.round((ms - s * 1000) * 1e6))];
}

const TS_KEY = /^(?:[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})$/;
const TS_VALUE = /^[ -~]{0,255}[!-~]$/;

/** A W3C tracestate as it may be sent on: valid members only, at most 32 and 512 characters, order kept. */
export function tracestate(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const kept: string[] = [];
  const keys = new Set<string>();
  let length = 0;
  for (const member of raw.split(',')) {
    const m = member.trim();
    const eq = m.indexOf('=');
    if (eq <= 0) continue;
    const key = m.slice(0, eq);
    const value = m.slice(eq + 1);
    if (!TS_KEY.test(key) || !TS_VALUE.test(value) || /[,=]/.test(value) || keys.has(key)) continue;
    if (length + m.length + (kept.length ? 1 : 0) > 512) continue;
    length += m.length + (kept.length ? 1 : 0);
    keys.add(key);
    kept.push(m);
    if (kept.length >= 32) break;
  }
  return kept.length ? kept.join(',') : undefined;
}

// version (not ff) - trace id (not all zeros) - parent id (not all zeros) - flags; a future version may add fields.
const TRACEPARENT = /^\s?((?!ff)[\da-f]{2})-((?![0]{32})[\da-f]{32})-((?![0]{16})[\da-f]{16})-([\da-f]{2})(-.*)?\s?$/;

/** A W3C traceparent as OpenTelemetry's propagator reads it, or undefined when it is not one. */
export function parseTraceparent(v: string): { traceId: string; spanId: string; sampled: boolean } | undefined {
  const m = TRACEPARENT.exec(v);
  if (!m || (m[1] === '00' && m[5])) return undefined;
  return { traceId: m[2] as string, spanId: m[3] as string, sampled: (parseInt(m[4] as string, 16) & 1) === 1 };
}

export function traceparentOf(s: SpanRec): string {
  return `00-${s.traceId}-${s.spanId}-${s.sampled ? '01' : '00'}`;
}
