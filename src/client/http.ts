/*
 * The Streamable HTTP transport of the outbound client: the SDK v2 transport
 * over a fetch of ours that enforces every HTTP rule before the SDK parses a byte.
 *
 *   openHttp(ticket 'mcp:connect', spec) ─► StreamableHTTPClientTransport
 *     (no retries, no resumption, no auth provider) with boundedFetch:
 *       only the reviewed endpoint URL ─► bearer added here, only https or loopback
 *       ─► no redirects (3xx fails) ─► at most `ordinary_requests` POSTs in flight
 *       ─► response: header and session-id sizes ─► JSON body ≤ body_bytes, or
 *          SSE: each raw event ≤ body_bytes, id ≤ event_id_bytes, events/s
 *          (blank and comment lines count); a request's stream that ends before
 *          answering it is truncated ─► lifetime bytes
 *       ─► error bodies reduced to code (+ supported versions); auth challenges dropped
 *       ─► a 404 once a session exists: the session expired; the call fails, nothing is repeated
 *       ─► a second initialize is refused (no silent re-initialization)
 *   send(notifications/cancelled) ─► the cancelled request's open stream is closed too
 *   cleanup() ─► DELETE the legacy session (deadline; also after a fault, never after
 *                expiry) ─► abort open streams ─► close
 *
 * Node's fetch reads no proxy variables, so no inherited proxy is used.
 */
import { type JSONRPCMessage, StreamableHTTPClientTransport, type Transport, type TransportSendOptions } from '@modelcontextprotocol/client';
import type { Limits } from '../../gen/types/limits.js';
import { ScError } from '../errors.js';
import { isLoopbackHost } from '../policy/net.js';
import { TokenBucket } from '../transport/rate.js';
import { assertTicket, type GateTicket } from '../ticket.js';

export interface HttpSpec {
  readonly url: string;
  readonly bearer: string | undefined;
  readonly bearerName: string | undefined;
  readonly limits: Limits['http_client'];
  readonly lifetimeBytes: number;
  readonly timeoutMs: number;
}

export function openHttp(ticket: GateTicket, spec: HttpSpec): HttpTransport {
  assertTicket(ticket, 'mcp:connect');
  if (spec.bearerName && spec.bearer === undefined) throw new ScError('SC_SECRET_NOT_FOUND', `api_key_env ${spec.bearerName} is neither a stored secret nor set in the environment`);
  const u = new URL(spec.url);
  if (spec.bearer !== undefined && u.protocol !== 'https:' && !isLoopbackHost(u.hostname)) throw new ScError('SC_DEF_INVALID', 'a bearer credential is sent only over https outside loopback');
  return new HttpTransport(spec);
}

/** The ids of the requests in one of our POST bodies (JSON-encoded, to compare), and whether one is initialize. */
function requestsOf(body: string): { ids: Set<string>; initialize: boolean } {
  const ids = new Set<string>();
  let initialize = false;
  try {
    const v = JSON.parse(body) as unknown;
    for (const m of (Array.isArray(v) ? v : [v]) as Array<{ id?: unknown; method?: unknown }>) {
      if (typeof m?.method !== 'string' || m.id === undefined || m.id === null) continue;
      ids.add(JSON.stringify(m.id));
      if (m.method === 'initialize') initialize = true;
    }
  } catch {
    // Not ours to judge: the SDK wrote it.
  }
  return { ids, initialize };
}

/** Removes from `pending` the ids one raw SSE event answers. */
function answered(raw: string, pending: Set<string>): void {
  const data = raw
    .split(/\r\n|\r|\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
    .join('\n');
  if (!data) return;
  try {
    const v = JSON.parse(data) as unknown;
    for (const m of (Array.isArray(v) ? v : [v]) as Array<{ id?: unknown; result?: unknown; error?: unknown }>) {
      if (m && (m.result !== undefined || m.error !== undefined)) pending.delete(JSON.stringify(m.id));
    }
  } catch {
    // Malformed data is the SDK's to report; it answers nothing.
  }
}

const headerBytes = (h: Headers): number => {
  let n = 0;
  h.forEach((v, k) => (n += k.length + v.length + 4));
  return n;
};

export class HttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  private readonly inner: StreamableHTTPClientTransport;
  private readonly endpoint: URL;
  private readonly master = new AbortController();
  private fault: ScError | undefined;
  private closing: Promise<{ outcome: string }> | undefined;
  private hadSession = false;
  private initialized = false;
  private received = 0;
  private inflight = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly events: TokenBucket;
  /** The open POST of each request still unanswered, by JSON-encoded id, so a cancel can close its stream. */
  private readonly streams = new Map<string, AbortController>();

  constructor(private readonly spec: HttpSpec) {
    this.endpoint = new URL(spec.url);
    this.events = new TokenBucket(spec.limits.events_per_second, spec.limits.events_per_second);
    this.inner = new StreamableHTTPClientTransport(this.endpoint, {
      fetch: (url, init) => this.fetch(url, init),
      requestInit: { redirect: 'manual' },
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
  }

  get failure(): ScError | undefined {
    return this.fault;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  readonly hasPerRequestStream = true;

  setProtocolVersion(v: string): void {
    this.inner.setProtocolVersion(v);
  }

  private fail(err: ScError): ScError {
    if (!this.fault) {
      this.fault = err;
      this.onerror?.(err);
      void this.cleanup();
    }
    return this.fault;
  }

  async start(): Promise<void> {
    this.inner.onmessage = (m) => this.onmessage?.(m);
    this.inner.onerror = (e) => this.onerror?.(e);
    this.inner.onclose = () => this.onclose?.();
    await this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.fault) return Promise.reject(this.fault);
    // A legacy-era cancel is a notification; the request's own stream would stay open until its deadline.
    const m = message as { method?: string; params?: { requestId?: unknown } };
    if (m.method === 'notifications/cancelled' && m.params?.requestId !== undefined) this.streams.get(JSON.stringify(m.params.requestId))?.abort();
    return this.inner.send(message, options);
  }

  async close(): Promise<void> {
    await this.cleanup();
  }

  cleanup(): Promise<{ outcome: string }> {
    this.closing ??= (async () => {
      let outcome = 'closed';
      if (this.inner.sessionId && !this.fault?.detail?.expired) {
        try {
          await this.inner.terminateSession();
          outcome = 'session_deleted';
        } catch {
          outcome = 'session_delete_failed';
        }
      }
      this.master.abort();
      await this.inner.close().catch(() => {});
      return { outcome };
    })();
    return this.closing;
  }

  private async acquire(): Promise<void> {
    if (this.inflight < this.spec.limits.ordinary_requests) {
      this.inflight++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inflight++;
  }

  private release(): void {
    this.inflight--;
    this.waiting.shift()?.();
  }

  private count(n: number): void {
    this.received += n;
    if (this.received > this.spec.lifetimeBytes) throw this.fail(new ScError('SC_MCP_PROTOCOL', `more than ${this.spec.lifetimeBytes} bytes received over this connection`));
  }

  private async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const method = (init.method ?? 'GET').toUpperCase();
    // After a fault nothing more is sent, except cleanup's bounded DELETE of the session.
    if (this.fault && !(method === 'DELETE' && this.closing)) throw this.fault;
    const target = new URL(String(url));
    // The bearer, and every request, go only to the endpoint the user reviewed.
    if (target.href !== this.endpoint.href) throw this.fail(new ScError('SC_MCP_PROTOCOL', 'a request to a URL other than the reviewed endpoint was refused'));
    const sent = method === 'POST' && typeof init.body === 'string' ? requestsOf(init.body) : { ids: new Set<string>(), initialize: false };
    if (sent.initialize) {
      if (this.initialized) throw this.fail(new ScError('SC_MCP_PROTOCOL', 'the connection would initialize a second time; a lost session fails instead'));
      this.initialized = true;
    }
    const headers = new Headers(init.headers);
    headers.delete('authorization');
    if (headerBytes(headers) > this.spec.limits.protocol_header_bytes) throw new ScError('SC_LIMIT_REACHED', `request headers are larger than ${this.spec.limits.protocol_header_bytes} bytes`);
    if (this.spec.bearer !== undefined) headers.set('authorization', `Bearer ${this.spec.bearer}`);
    const signals = [this.master.signal, ...(init.signal ? [init.signal] : [])];
    if (method === 'DELETE') signals.push(AbortSignal.timeout(this.spec.limits.session_delete_deadline_ms));
    else if (method === 'POST') signals.push(AbortSignal.timeout(this.spec.timeoutMs));
    const own = new AbortController();
    signals.push(own.signal);
    for (const id of sent.ids) this.streams.set(id, own);
    const ordinary = method === 'POST';
    if (ordinary) await this.acquire();
    let released = !ordinary;
    const done = () => {
      for (const id of sent.ids) if (this.streams.get(id) === own) this.streams.delete(id);
      if (!released) (released = true), this.release();
    };
    try {
      const res = await fetch(target, { ...init, method, headers, redirect: 'manual', signal: AbortSignal.any(signals) });
      return await this.admit(res, method, sent.ids, done);
    } catch (err) {
      done();
      if (this.fault) throw this.fault;
      if (err instanceof ScError) throw err;
      const name = (err as Error).name;
      const code = (err as { cause?: { code?: string } }).cause?.code;
      // undici refuses oversized response headers itself, at the same 16 KiB; it is the same limit.
      if (code === 'UND_ERR_HEADERS_OVERFLOW') throw this.fail(new ScError('SC_MCP_PROTOCOL', `response headers are larger than ${this.spec.limits.protocol_header_bytes} bytes`));
      if (name === 'TimeoutError') throw new ScError('SC_TIMEOUT', `the server did not answer within ${method === 'DELETE' ? this.spec.limits.session_delete_deadline_ms : this.spec.timeoutMs} ms`);
      // Transport errors name no peer detail: host, status and body stay out of diagnostics.
      throw new ScError('SC_MCP_CONNECT_FAILED', `the server could not be reached (${code ?? name})`);
    }
  }

  private async admit(res: Response, method: string, ids: Set<string>, done: () => void): Promise<Response> {
    const lim = this.spec.limits;
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => {});
      throw this.fail(new ScError('SC_MCP_PROTOCOL', `the server answered with a redirect (${res.status}); redirects are not followed`));
    }
    if (headerBytes(res.headers) > lim.protocol_header_bytes) throw this.fail(new ScError('SC_MCP_PROTOCOL', `response headers are larger than ${lim.protocol_header_bytes} bytes`));
    const sid = res.headers.get('mcp-session-id');
    if (sid !== null) {
      if (Buffer.byteLength(sid) > lim.session_id_bytes) throw this.fail(new ScError('SC_MCP_PROTOCOL', `the session id is longer than ${lim.session_id_bytes} bytes`));
      this.hadSession = true;
    }
    if (res.status === 404 && this.hadSession && method !== 'DELETE') {
      await res.body?.cancel().catch(() => {});
      throw this.fail(new ScError('SC_MCP_SESSION_EXPIRED', 'the server no longer knows this session (404); the request failed and is not repeated; start a new task to reconnect', { expired: true }));
    }
    const headers = new Headers(res.headers);
    headers.delete('www-authenticate');
    if (res.status >= 400) {
      const body = await this.readBounded(res, lim.body_bytes).finally(done);
      return new Response(this.reduceError(body), { status: res.status, headers });
    }
    const type = res.headers.get('content-type') ?? '';
    if (!res.body) {
      done();
      return new Response(null, { status: res.status, headers });
    }
    if (type.includes('text/event-stream')) return new Response(this.guardSse(res.body, ids, done), { status: res.status, headers });
    const body = await this.readBounded(res, lim.body_bytes).finally(done);
    return new Response(new Uint8Array(body), { status: res.status, headers });
  }

  /** A peer's error answer without its text: a JSON-RPC error keeps its code (and a version list), nothing else. */
  private reduceError(body: Buffer): string | null {
    try {
      const v = JSON.parse(body.toString('utf8')) as { id?: unknown; error?: { code?: unknown; data?: { supported?: unknown } } };
      if (typeof v?.error?.code !== 'number') return null;
      const supported = Array.isArray(v.error.data?.supported) ? v.error.data.supported.filter((s) => typeof s === 'string' && s.length < 32).slice(0, 16) : undefined;
      return JSON.stringify({ jsonrpc: '2.0', id: v.id ?? null, error: { code: v.error.code, message: 'the server refused the request', ...(supported ? { data: { supported } } : {}) } });
    } catch {
      return null;
    }
  }

  private async readBounded(res: Response, cap: number): Promise<Buffer> {
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const parts: Uint8Array[] = [];
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
      this.count(value.byteLength);
      if (n > cap) {
        await reader.cancel().catch(() => {});
        throw this.fail(new ScError('SC_MCP_PROTOCOL', `a response body is larger than ${cap} bytes`));
      }
      parts.push(value);
    }
    return Buffer.concat(parts);
  }

  /**
   * Passes an SSE stream through unchanged while bounding each raw event, each id, and
   * the event rate. The stream of a POST must answer its requests (`ids`) before it
   * ends: one that stops short is truncated, and fails now rather than at the deadline.
   */
  private guardSse(body: ReadableStream<Uint8Array>, ids: Set<string>, done: () => void): ReadableStream<Uint8Array> {
    const lim = this.spec.limits;
    const pending = new Set(ids);
    let raw: Uint8Array[] = [];
    let line = 0;
    let lineStart: number[] = [];
    let event = 0;
    const check = (first: number[], len: number): ScError | undefined => {
      // A blank line ends an event, a ':' line is a comment: both count, so neither can flood.
      const blank = len === 0 || (len === 1 && first[0] === 0x0d);
      if ((blank || first[0] === 0x3a) && !this.events.take()) return new ScError('SC_MCP_PROTOCOL', `more than ${lim.events_per_second} SSE events in one second`);
      const isId = first[0] === 0x69 && first[1] === 0x64 && first[2] === 0x3a;
      if (isId && len > lim.event_id_bytes + 3) return new ScError('SC_MCP_PROTOCOL', `an SSE event id is longer than ${lim.event_id_bytes} bytes`);
      return undefined;
    };
    const reader = body.getReader();
    const scan = (chunk: Uint8Array): ScError | undefined => {
      let from = 0;
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i] as number;
        if (b === 0x0a) {
          const blank = line === 0 || (line === 1 && lineStart[0] === 0x0d);
          const bad = check(lineStart, line);
          if (bad) return bad;
          line = 0;
          lineStart = [];
          if (blank) {
            event = 0;
            // Only while an answer is still owed is the event read for its id.
            if (pending.size > 0) answered(Buffer.concat([...raw, chunk.subarray(from, i + 1)]).toString('utf8'), pending);
            raw = [];
            from = i + 1;
          }
          continue;
        }
        if (lineStart.length < 3) lineStart.push(b);
        line++;
        event++;
        if (event > lim.body_bytes) return new ScError('SC_MCP_PROTOCOL', `an SSE event is larger than ${lim.body_bytes} bytes`);
      }
      if (pending.size > 0 && from < chunk.length) raw.push(chunk.subarray(from));
      return undefined;
    };
    // Pull-driven: nothing is read from the peer faster than the SDK consumes it.
    return new ReadableStream<Uint8Array>({
      pull: async (ctl) => {
        let r: ReadableStreamReadResult<Uint8Array>;
        try {
          r = await reader.read();
        } catch (err) {
          done();
          return ctl.error(this.fault ?? err);
        }
        if (r.done) {
          done();
          if (pending.size > 0) return ctl.error(this.fail(new ScError('SC_MCP_PROTOCOL', 'an SSE stream ended before it answered its request; the response is truncated')));
          return ctl.close();
        }
        try {
          this.count(r.value.byteLength);
        } catch (err) {
          done();
          await reader.cancel().catch(() => {});
          return ctl.error(err);
        }
        const bad = scan(r.value);
        if (bad) {
          done();
          await reader.cancel().catch(() => {});
          return ctl.error(this.fail(bad));
        }
        ctl.enqueue(r.value);
      },
      cancel: async (reason) => {
        done();
        await reader.cancel(reason).catch(() => {});
      },
    });
  }
}
