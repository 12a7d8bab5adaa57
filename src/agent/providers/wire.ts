/*
 * The one HTTP exchange of a model turn: a JSON POST whose answer is an event
 * stream, read under every bound from policy/limits.json `models`.
 *
 *   post ─► fresh socket (connect_ms) ─► request written ─► headers (first_byte_ms)
 *        ─► 2xx event stream: each chunk ─► onChunk   (idle_ms between chunks)
 *        ─► 3xx: refused, never followed   ─► other: error body (error_body_bytes) ─► SC_MODEL_FAILED
 *   all of it within total_ms and response_bytes; the caller's signal aborts it.
 *
 * Why node:http and not the vendors' SDKs or fetch: fetch has no connect or
 * first-byte hook and follows nothing we can bound per phase; the SDKs read
 * keys from process.env by default, add headers and retries of their own and
 * are not runtime dependencies. A fresh socket per turn (agent: false) makes
 * the connect deadline exact; a turn's latency dwarfs a loopback or TLS setup.
 * `localhost` resolves to loopback addresses only, whatever the resolver says.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { ScError } from '../../errors.js';
import { isLoopbackIp } from '../../policy/net.js';
import { scrubText } from '../../policy/redact.js';
import { tel } from '../../telemetry/hooks.js';
import { assertTicket, type GateTicket } from '../../ticket.js';

export interface WireLimits {
  readonly connect_ms: number;
  readonly first_byte_ms: number;
  readonly idle_ms: number;
  readonly total_ms: number;
  readonly response_bytes: number;
  readonly error_body_bytes: number;
}

export interface PostOptions {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly limits: WireLimits;
  readonly signal: AbortSignal;
  /** Which model, for messages. */
  readonly label: string;
}

const MESSAGE_CHARS = 400;

/** A provider's error text, shortened and stripped of every known secret value. */
export function redactedMessage(text: string): string {
  const one = scrubText(text).replace(/\s+/g, ' ').trim();
  return one.length > MESSAGE_CHARS ? `${one.slice(0, MESSAGE_CHARS)}…` : one;
}

/** The message inside a provider's JSON error body, in either vendor's shape, or the raw text. */
function errorText(raw: string): string {
  try {
    const j = JSON.parse(raw) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof j.error === 'string') return j.error;
    if (j.error && typeof j.error.message === 'string') return j.error.message;
    if (typeof j.message === 'string') return j.message;
  } catch {
    // not JSON: the raw text, redacted, is the best message there is
  }
  return raw;
}

export const loopbackOnly: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = (addresses as LookupAddress[]).filter((a) => isLoopbackIp(a.address));
    if (list.length === 0) return callback(Object.assign(new Error(`${hostname} resolves to no loopback address`), { code: 'ENOTFOUND' }), '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    const first = list[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
};

/** POSTs and streams the answer into onChunk; resolves at its end. */
export function postStream(ticket: GateTicket, opts: PostOptions, onChunk: (chunk: Buffer) => void): Promise<void> {
  assertTicket(ticket, 'model:request');
  const { url, limits, label } = opts;
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let phase: NodeJS.Timeout | undefined;
    const timers: NodeJS.Timeout[] = [];
    const finish = (err?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(phase);
      for (const t of timers) clearTimeout(t);
      opts.signal.removeEventListener('abort', onAbort);
      if (err !== undefined) {
        req.destroy();
        reject(err);
      } else resolve();
    };
    const deadline = (ms: number, what: string): void => {
      clearTimeout(phase);
      phase = setTimeout(() => finish(new ScError('SC_TIMEOUT', `model ${label}: ${what} within ${ms} ms`, { deadline_ms: ms })), ms);
    };
    const onAbort = (): void => finish(opts.signal.reason ?? new DOMException('aborted', 'AbortError'));

    const mod = url.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { ...opts.headers, 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': String(Buffer.byteLength(opts.body)) };
    // With telemetry on: the chat span's W3C traceparent, so a model gateway's trace joins ours.
    tel()?.inject(headers);
    const req = mod.request(url, {
      method: 'POST',
      agent: false,
      headers,
      ...(url.hostname.toLowerCase() === 'localhost' ? { lookup: loopbackOnly } : {}),
    });
    timers.push(setTimeout(() => finish(new ScError('SC_TIMEOUT', `model ${label}: no complete answer within ${limits.total_ms} ms`, { deadline_ms: limits.total_ms })), limits.total_ms));
    deadline(limits.connect_ms, 'no connection');
    req.on('socket', (socket) => {
      const connected = (): void => deadline(limits.first_byte_ms, 'no answer');
      if (!socket.connecting) connected();
      else socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', connected);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      finish(new ScError('SC_MODEL_FAILED', `model ${label}: connection failed (${err.code ?? redactedMessage(err.message)})`, { status: null }));
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      let bytes = 0;
      if (status >= 300 && status < 400) {
        res.resume();
        finish(new ScError('SC_MODEL_FAILED', `model ${label}: HTTP ${status} redirect refused; configure the final URL`, { status }));
        return;
      }
      if (status < 200 || status >= 300) {
        const parts: Buffer[] = [];
        deadline(limits.idle_ms, 'no error body');
        res.on('data', (d: Buffer) => {
          if (bytes >= limits.error_body_bytes) return;
          parts.push(d.subarray(0, limits.error_body_bytes - bytes));
          bytes += d.length;
          deadline(limits.idle_ms, 'no error body');
        });
        const fail = (): void => {
          const detail: Record<string, unknown> = { status };
          const retry = res.headers['retry-after'];
          if (typeof retry === 'string' && /^\d{1,6}$/.test(retry)) detail.retry_after_s = Number(retry);
          finish(new ScError('SC_MODEL_FAILED', `model ${label}: HTTP ${status}: ${redactedMessage(errorText(Buffer.concat(parts).toString('utf8'))) || '(no message)'}`, detail));
        };
        res.on('end', fail);
        res.on('error', fail);
        return;
      }
      const type = String(res.headers['content-type'] ?? '');
      if (!/^text\/event-stream\b/i.test(type)) {
        res.resume();
        finish(new ScError('SC_MODEL_FAILED', `model ${label}: the answer is not an event stream (content-type ${redactedMessage(type.slice(0, 64)) || 'none'})`, { status }));
        return;
      }
      deadline(limits.idle_ms, 'the stream went silent');
      res.on('data', (d: Buffer) => {
        if (settled) return;
        bytes += d.length;
        if (bytes > limits.response_bytes) {
          finish(new ScError('SC_MODEL_RESPONSE_TOO_LARGE', `model ${label}: the answer exceeds ${limits.response_bytes} bytes`, { limit_bytes: limits.response_bytes }));
          return;
        }
        deadline(limits.idle_ms, 'the stream went silent');
        try {
          onChunk(d);
        } catch (err) {
          finish(err);
        }
      });
      res.on('end', () => finish());
      res.on('aborted', () => finish(new ScError('SC_MODEL_FAILED', `model ${label}: the connection closed mid-answer`, { status })));
      res.on('error', () => finish(new ScError('SC_MODEL_FAILED', `model ${label}: the connection closed mid-answer`, { status })));
    });
    if (opts.signal.aborted) return onAbort();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    req.end(opts.body);
  });
}
