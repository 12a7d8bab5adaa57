/*
 * An outbound tools/call on a 2025-era connection, sent and answered without the SDK
 * client's generic request path, with the SDK's own wire codec deciding what the answer is.
 *
 *   McpConnection.call ─► FastCalls.for(client)? (a 2025-era codec and the SDK's id counter
 *                         reachable; telemetry off, checked per call) ─► call(name, args, …)
 *     id: the next number of the SDK's own counter (so it can never collide with one of the SDK's)
 *     ─► {method: 'tools/call', params: {name, arguments}, jsonrpc, id}: the bytes the SDK sends
 *     PeerGuard ─► take(message): a response with one of our ids, before the SDK sees it
 *        result ─► text blocks alone (textOnly)? the value as it came: the SDK's check returns it unchanged
 *               else codec.decodeResult ─► codec.validateResult ─► the value the SDK would return
 *        error  ─► ProtocolError.fromError, as the SDK raises it
 *     timeout, or the caller's abort ─► notifications/cancelled {requestId, reason} ─► rejected
 *        with the SDK's error (a later answer is left to the SDK, which drops it as unknown)
 *     the transport closes ─► every pending call fails with the SDK's "Connection closed",
 *        and every later one with its "Not connected"
 *   anything else ─► client.request, as before
 *
 * Why: on a paced relay call the SDK client spent about half a millisecond between the
 * answer's line and its caller (docs/performance.md): two zod type guards over the whole
 * message, the codec's decode, an asynchronous standard-schema step and promise hops. The
 * result check itself stays: it is the SDK's codec, called directly, except for an answer of
 * text blocks alone, whose outcome is known without it (about a tenth of the relay's CPU). A response the SDK
 * would not recognise as one (no `jsonrpc: '2.0'`, a result that is not an object, an
 * error without an integer code and a string message) is not taken here and goes to the
 * SDK, which drops it, as it would. test/client/fast-calls.test.ts holds the two paths
 * to the same answers, errors, cancellations and wire bytes.
 */
import { type Client, type JSONRPCMessage, ProtocolError, SdkError, SdkErrorCode, type Transport } from '@modelcontextprotocol/client';
import { MODERN_REVISION } from '../version.js';

type Msg = Record<string, unknown>;
type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string; readonly message?: string };
type Decoded = { readonly kind: string; readonly result?: unknown; readonly error?: Error };

/** The part of the SDK's 2025-era wire codec this uses (Protocol._wireCodec()). */
interface WireCodec {
  readonly era: string;
  decodeResult(method: string, raw: unknown): Decoded;
  validateResult(method: string, raw: unknown): Outcome;
}

/** What of the SDK client this reaches past its public surface: checked once, at connect. */
interface ClientInternals {
  _requestMessageId: number;
  _wireCodec(): WireCodec;
}

const isPlain = (v: unknown): v is Msg => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `{content: [{type: 'text', text}, …]}`, optionally followed by a boolean `isError`, and
 * nothing else, in that key order: what most tools answer. The SDK's 2025 result schema
 * accepts exactly such a value unchanged (its output has the same keys in the same order;
 * test/client/fast-calls.test.ts compares the two), so its check is skipped for it; any
 * other key, block type or order goes through the check.
 */
export function textOnly(r: Msg): boolean {
  let n = 0;
  for (const k in r) {
    if (n === 0 ? k !== 'content' : n !== 1 || k !== 'isError' || typeof r.isError !== 'boolean') return false;
    n++;
  }
  const c = r.content;
  if (!Array.isArray(c)) return false;
  for (const b of c) {
    if (!isPlain(b)) return false;
    let i = 0;
    for (const k in b) {
      if (i > 1 || k !== (i === 0 ? 'type' : 'text')) return false;
      i++;
    }
    if (i !== 2 || b.type !== 'text' || typeof b.text !== 'string') return false;
  }
  return true;
}

interface Pending {
  readonly resolve: (v: Record<string, unknown>) => void;
  readonly reject: (e: unknown) => void;
}

/** The calls of one connection taken past the SDK client. */
export class FastCalls {
  private readonly pending = new Map<number, Pending>();
  /** The transport closed: the SDK has let go of it too, and says so for every later request. */
  private over = false;

  private constructor(
    private readonly sdk: ClientInternals,
    private readonly codec: WireCodec,
    private readonly wire: Transport,
  ) {}

  /** For a connected client whose era is 2025's and whose internals are as this expects; else null (the SDK path). */
  static for(client: Client, wire: Transport): FastCalls | null {
    const sdk = client as unknown as Partial<ClientInternals>;
    if (client.getProtocolEra() !== 'legacy' || typeof sdk._requestMessageId !== 'number' || typeof sdk._wireCodec !== 'function') return null;
    const codec = sdk._wireCodec.call(client);
    if (typeof codec?.decodeResult !== 'function' || typeof codec.validateResult !== 'function' || codec.era === MODERN_REVISION) return null;
    return new FastCalls(sdk as ClientInternals, codec, wire);
  }

  /** One tools/call; settles as client.request({method: 'tools/call'}) would with `timeout` and `signal`. */
  call(name: string, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (signal.aborted) {
      const reason = signal.reason;
      return Promise.reject(reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)));
    }
    if (this.over) return Promise.reject(new Error('Not connected'));
    const id = this.sdk._requestMessageId++;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      let settled = false;
      const done = () => {
        settled = true;
        this.pending.delete(id);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const cancel = (reason: unknown) => {
        if (settled) return;
        done();
        this.wire.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(reason) } } as JSONRPCMessage).catch(() => {});
        reject(reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)));
      };
      const onAbort = () => cancel(signal.reason);
      const timer = setTimeout(() => cancel(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: timeoutMs })), timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (v) => (done(), resolve(v)),
        reject: (e) => (done(), reject(e)),
      });
      this.wire.send({ method: 'tools/call', params: { name, arguments: args }, jsonrpc: '2.0', id } as JSONRPCMessage).catch((e) => {
        if (!settled) (done(), reject(e));
      });
    });
  }

  /** Takes a response to one of our calls (true); anything else is the SDK's (false). */
  take(m: Msg): boolean {
    if (typeof m.id !== 'number' || m.method !== undefined || m.jsonrpc !== '2.0') return false;
    const p = this.pending.get(m.id);
    if (!p) return false;
    if (isPlain(m.result)) {
      this.answer(p, m.result);
      return true;
    }
    const e = m.error;
    if (!isPlain(e) || !Number.isInteger(e.code) || typeof e.message !== 'string') return false;
    p.reject(ProtocolError.fromError(e.code as number, e.message, e.data));
    return true;
  }

  private answer(p: Pending, raw: Msg): void {
    // Text blocks alone: the SDK's check would hand back this very value, key for key (a fresh copy of it).
    if (textOnly(raw)) return p.resolve(raw);
    let decoded: Decoded;
    try {
      decoded = this.codec.decodeResult('tools/call', raw);
    } catch (err) {
      return p.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (decoded.kind !== 'complete') return p.reject(decoded.error ?? new SdkError(SdkErrorCode.InvalidResult, `Invalid result for tools/call: ${decoded.kind}`));
    const out = this.codec.validateResult('tools/call', decoded.result);
    if (out.ok) return p.resolve(out.value as Record<string, unknown>);
    p.reject(new SdkError(SdkErrorCode.InvalidResult, `Invalid result for tools/call: ${out.reason === 'invalid' ? out.message : `not-in-era: tools/call`}`));
  }

  /** The transport closed: every pending call fails as the SDK fails its own. */
  closed(): void {
    this.over = true;
    if (this.pending.size === 0) return;
    const error = new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed');
    for (const p of [...this.pending.values()]) p.reject(error);
  }
}
