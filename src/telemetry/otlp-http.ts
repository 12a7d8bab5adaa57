/*
 * The way to one collector: OTLP over HTTP, one POST per batch, and a back-off shared by every
 * signal that goes there.
 *
 *   openCollector(ticket cli:telemetry.export) ─► Collector (one per origin)
 *   collector.post(target, body) ─► waiting()? ─► { ok: false, retry: true } at once, no connection tried
 *                                └► POST (keep-alive, unreferenced socket, export timeout)
 *        2xx                               ─► ok; the back-off is reset
 *        refused, reset, no answer in time,
 *        429 / 502 / 503 / 504 (Retry-After) ─► retry: the collector is left alone for a back-off that
 *                                             doubles from retry_min_ms to retry_max_ms (with jitter)
 *        any other status                 ─► failed, not retried (the collector refused the batch)
 *
 * Why our own and not the OTLP exporters': theirs retry each batch up to five times within the
 * export timeout, and every new batch starts over against a collector already known dead; here a
 * dead collector costs one connection attempt per back-off period, whatever the call rate. Its
 * sockets are unreferenced: an export never keeps a finished process alive (shutdown waits for it
 * explicitly, within its deadline).
 */
import http from 'node:http';
import https from 'node:https';
import { assertTicket, type GateTicket } from '../ticket.js';
import type { SignalTarget } from './config.js';

/** `skipped`: no attempt was made, the collector is being left alone. */
export type PostResult = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly skipped?: boolean; readonly error: string };

export interface CollectorOptions {
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  readonly userAgent: string;
}

/** Most of a collector's answer read (a partial-success message is small; the rest is ignored). */
const ANSWER_BYTES = 64 * 1024;

const CONTENT_TYPE = { 'http/protobuf': 'application/x-protobuf', 'http/json': 'application/json' } as const;

export class Collector {
  private readonly agents = { http: new http.Agent({ keepAlive: true, maxSockets: 4 }), https: new https.Agent({ keepAlive: true, maxSockets: 4 }) };
  /** Epoch ms before which nothing is sent; 0 while the collector answers. */
  private until = 0;
  private delay = 0;
  /** Connection attempts made and skipped while backing off, for tests and the bench. */
  readonly tries = { attempted: 0, skipped: 0 };

  constructor(private readonly o: CollectorOptions) {}

  /** How long the collector is still left alone, in ms (0: it may be tried now). */
  waiting(now = Date.now()): number {
    return Math.max(0, this.until - now);
  }

  private backOff(retryAfterMs: number | undefined): void {
    this.delay = this.delay === 0 ? this.o.retryMinMs : Math.min(this.o.retryMaxMs, this.delay * 2);
    // ±20 % so that the processes of one machine do not come back in step.
    const wait = Math.min(this.o.retryMaxMs, Math.max(retryAfterMs ?? 0, this.delay * (0.8 + Math.random() * 0.4)));
    this.until = Date.now() + wait;
  }

  /** One POST of an encoded batch; never throws. `force` tries even while backing off (the shutdown's one last attempt). */
  post(target: SignalTarget, body: Uint8Array, force = false): Promise<PostResult> {
    if (!force && this.waiting() > 0) {
      this.tries.skipped++;
      return Promise.resolve({ ok: false, retry: true, skipped: true, error: 'the collector is being left alone after a failure (back-off)' });
    }
    return this.send(target, body, true);
  }

  private send(target: SignalTarget, body: Uint8Array, first: boolean): Promise<PostResult> {
    this.tries.attempted++;
    return new Promise<PostResult>((resolve) => {
      let settled = false;
      const done = (r: PostResult, retryAfterMs?: number) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (r.ok) {
          this.delay = 0;
          this.until = 0;
        } else if (r.retry) this.backOff(retryAfterMs);
        resolve(r);
      };
      let url: URL;
      try {
        url = new URL(target.url);
      } catch {
        return done({ ok: false, retry: false, error: 'the endpoint is not a URL' });
      }
      const secure = url.protocol === 'https:';
      const req = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.agents.https : this.agents.http,
        headers: { ...target.headers, 'content-type': CONTENT_TYPE[target.protocol], 'content-length': String(body.byteLength), 'user-agent': this.o.userAgent },
      });
      const timer = setTimeout(() => {
        req.destroy();
        done({ ok: false, retry: true, error: `no answer within ${target.timeoutMs} ms` });
      }, target.timeoutMs);
      timer.unref();
      req.on('socket', (s) => s.unref());
      req.on('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        // A kept-alive connection the collector closed while it sat idle: once more on a new one, no back-off.
        if (first && req.reusedSocket && code === 'ECONNRESET' && !settled) {
          settled = true;
          clearTimeout(timer);
          return void this.send(target, body, false).then(resolve);
        }
        done({ ok: false, retry: true, error: code ?? err.message });
      });
      req.on('response', (res) => {
        let read = 0;
        res.on('data', (c: Buffer) => {
          read += c.length;
          if (read > ANSWER_BYTES) res.destroy();
        });
        res.on('error', () => {});
        res.on('close', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return done({ ok: true });
          const retry = status === 429 || status === 502 || status === 503 || status === 504;
          done({ ok: false, retry, error: `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}` }, retry ? retryAfter(res.headers['retry-after']) : undefined);
        });
      });
      req.end(body);
    });
  }
}

/** Retry-After in seconds or as an HTTP date, in ms; undefined when absent or unreadable. */
function retryAfter(v: string | undefined): number | undefined {
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The collector a signal's target goes to. */
export type CollectorOf = (target: SignalTarget) => Collector;

/** The collectors of one export, one per origin: signals sent to the same place share its back-off. */
export function openCollectors(ticket: GateTicket, o: CollectorOptions): CollectorOf {
  assertTicket(ticket, 'cli:telemetry.export');
  const byOrigin = new Map<string, Collector>();
  return (target) => {
    const origin = new URL(target.url).origin;
    let c = byOrigin.get(origin);
    if (!c) byOrigin.set(origin, (c = new Collector(o)));
    return c;
  };
}
