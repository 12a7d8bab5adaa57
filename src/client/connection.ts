/*
 * One live connection to an external MCP server, over a transport opened under
 * an mcp:connect decision.
 *
 *   connectServer(ticket, transport, opts)
 *     ─► permit (connections_per_process, held through cleanup)
 *     ─► SDK v2 Client: no capabilities; PeerGuard declines elicitation and
 *        refuses sampling/roots; negotiation 'auto' (2026-07-28 first, then
 *        legacy initialize), one deadline for initialize
 *     ─► discoverTools (catalog limits, one shared deadline)
 *   call(ticket 'mcp:call', name, args) ─► one tools/call with the timeout, never
 *        retried (with telemetry on: in a CLIENT span, its traceparent in params._meta;
 *        on a 2025-era connection with telemetry off: past the SDK client, fast-calls.ts);
 *        isError, structuredContent and content pass through unchanged;
 *        an input-required or task continuation is refused
 *   close() ─► transport cleanup (group TERM/KILL/reap, or session DELETE) ─► permit back
 *
 * After a failure the connection is closed and cannot offer its old catalog.
 */
import { blockText, type Discarded, type SandboxBlock } from '../engine/spawn/index.js';
import { Client, type Transport } from '@modelcontextprotocol/client';
import { asScError, ScError } from '../errors.js';
import { tel } from '../telemetry/hooks.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { VERSION } from '../version.js';
import { type CatalogLimits, discoverTools } from './discovery.js';
import { FastCalls } from './fast-calls.js';
import { PeerGuard, type PeerRequests } from './peer-guard.js';

export interface Closable extends Transport {
  /** Closes and waits for the transport's own cleanup; idempotent. */
  cleanup(): Promise<{ readonly outcome: string; readonly discarded?: Discarded | null }>;
  /** The transport's own account of why it failed, more exact than the SDK's. */
  readonly failure?: ScError | undefined;
  /** A local server's last words on stderr (scrubbed, control characters escaped), and the sandbox it ran in. */
  stderrTail?(): { readonly lines: readonly string[]; readonly sandboxed: boolean; readonly blocks?: readonly SandboxBlock[] };
}

/**
 * A failed review or call of a local server, with what the server itself said: the last lines
 * of its stderr (captured, never shown until now) and what the sandbox could have kept from it.
 */
export function withStderr(e: ScError, transport: Closable): ScError {
  // A cancel is the caller's own: what the server said as it was stopped ("Terminated") explains nothing.
  if (e.code === 'SC_CANCELLED') return e;
  const tail = transport.stderrTail?.();
  if (!tail || tail.lines.length === 0) return e;
  const blocks = tail.sandboxed ? [...(tail.blocks ?? [])] : [];
  // Paths its stderr names that the sandbox stood in the way of: named, each with the grant that shows it.
  const named = blocks.length ? `it ran in the sandbox, which is why it could not reach what it names:\n${blockText(blocks)}` : null;
  const hint = named ?? (tail.sandboxed
    ? "it ran in the sandbox, which shows it the project, the system read-only and only what its definition declares (no home, no /tmp of yours, no network): if its stderr names a folder, file or host it could not reach, declare it in the definition's sandbox key (sandbox: {read, write, network}), then store it and enable the new hash (shadowcode --project DIR sandbox show lists the defaults)"
    : 'it ran unsandboxed, with your full access: the sandbox did not stop it');
  const shown = tail.lines.map((l) => `  ${l}`).join('\n');
  return new ScError(e.code, `${e.message}\nthe server's stderr, last ${tail.lines.length === 1 ? 'line' : `${tail.lines.length} lines`} (secrets scrubbed):\n${shown}\nhint: ${hint}`, { ...(e.detail ?? {}), stderr_tail: [...tail.lines], hint, ...(blocks.length ? { sandbox_blocked: blocks } : {}), without_stderr: e.message });
}

export interface ConnectOptions {
  readonly id: string;
  readonly timeoutMs: number;
  readonly catalog: CatalogLimits;
  readonly maxConnections: number;
  readonly signal: AbortSignal;
  /** How the server is reached, for telemetry. */
  readonly peer?: { readonly transport: 'pipe' | 'tcp'; readonly address?: string; readonly port?: number };
}

export interface CloseReport {
  readonly outcome: string;
  /** A local server in the sandbox wrote files in its private home or /tmp, discarded when it ended. */
  readonly discarded?: Discarded;
  readonly peer: PeerRequests;
}

let active = 0;

/** Connections of this process that still hold a permit (through cleanup). */
export function activeConnections(): number {
  return active;
}

function mapError(err: unknown, transport: Closable, what: string, timeoutMs: number, signal: AbortSignal): ScError {
  if (transport.failure) return transport.failure;
  if (err instanceof ScError) return err;
  // The SDK reports a caller's abort as a timeout; it is a cancellation (the server is told, and a legacy HTTP stream is closed).
  if (signal.aborted) return new ScError('SC_CANCELLED', `${what} was cancelled before the server answered`);
  const e = err as { code?: unknown; message?: string; name?: string };
  const msg = String(e?.message ?? err).split('\n')[0]?.slice(0, 300) ?? '';
  if (e?.code === 'REQUEST_TIMEOUT' || e?.code === -32001 || /timed? ?out/i.test(msg)) return new ScError('SC_TIMEOUT', `${what} did not finish within ${timeoutMs} ms`);
  if (e?.name === 'AbortError' || /abort/i.test(msg)) return new ScError('SC_MCP_CALL_FAILED', `${what} was cut off: the connection closed`);
  return new ScError(what === 'initialize' ? 'SC_MCP_CONNECT_FAILED' : 'SC_MCP_CALL_FAILED', `${what} failed: ${msg}`);
}

export class McpConnection {
  private closing: Promise<CloseReport> | undefined;
  private dead: ScError | undefined;

  private constructor(
    readonly id: string,
    private readonly client: Client,
    private readonly guard: PeerGuard,
    private readonly transport: Closable,
    readonly tools: readonly Record<string, unknown>[],
    readonly era: string,
    private readonly timeoutMs: number,
    private readonly peer: ConnectOptions['peer'],
    private readonly fast: FastCalls | null,
  ) {}

  static async open(ticket: GateTicket, transport: Closable, opts: ConnectOptions): Promise<McpConnection> {
    assertTicket(ticket, 'mcp:connect');
    if (active >= opts.maxConnections) {
      await transport.cleanup().catch(() => {});
      throw new ScError('SC_LIMIT_REACHED', `this process already holds ${active} MCP client connections, the most allowed (${opts.maxConnections})`);
    }
    active++;
    const guard = new PeerGuard(transport);
    const client = new Client({ name: 'shadowcode', version: VERSION }, {
      capabilities: {},
      versionNegotiation: { mode: 'auto', probe: { timeoutMs: opts.timeoutMs, maxRetries: 0 } },
      listMaxPages: opts.catalog.pages,
      inputRequired: { autoFulfill: false },
    });
    client.onerror = () => {};
    let conn: McpConnection | undefined;
    // The SDK's version probe does not hear the signal (it waits out its own timeout): a cancel
    // while opening closes the transport, which ends every request still waiting on the server.
    const onAbort = () => void transport.cleanup().catch(() => {});
    opts.signal.addEventListener('abort', onAbort, { once: true });
    try {
      try {
        if (opts.signal.aborted) throw opts.signal.reason;
        await client.connect(guard, { timeout: opts.timeoutMs, maxTotalTimeout: opts.timeoutMs, signal: opts.signal });
      } catch (err) {
        throw mapError(err, transport, 'initialize', opts.timeoutMs, opts.signal);
      }
      let tools: Record<string, unknown>[];
      try {
        tools = await discoverTools(client, opts.catalog, opts.timeoutMs, opts.signal);
      } catch (err) {
        throw mapError(err, transport, 'tool discovery', opts.timeoutMs, opts.signal);
      }
      const fast = FastCalls.for(client, transport);
      if (fast) guard.calls = fast;
      conn = new McpConnection(opts.id, client, guard, transport, tools, client.getProtocolEra() ?? 'legacy', opts.timeoutMs, opts.peer, fast);
      return conn;
    } catch (err) {
      // Cleaned up first: the server is gone then, and all it wrote to stderr has been read.
      await transport.cleanup().catch(() => {});
      active--;
      throw withStderr(asScError(err), transport);
    } finally {
      opts.signal.removeEventListener('abort', onAbort);
    }
  }

  get failure(): ScError | undefined {
    return this.dead ?? this.transport.failure;
  }

  /** One tools/call; what the server answered, unchanged. Never retried. */
  async call(ticket: GateTicket, name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>> {
    assertTicket(ticket, 'mcp:call');
    if (this.closing || this.failure) throw this.failure ?? new ScError('SC_MCP_CALL_FAILED', `the connection to ${this.id} is closed; start a new task to reconnect`);
    let res: Record<string, unknown>;
    try {
      const send = (meta?: Record<string, string>) =>
        this.client.request({ method: 'tools/call', params: { name, arguments: args, ...(meta && Object.keys(meta).length ? { _meta: meta } : {}) } }, { timeout: this.timeoutMs, maxTotalTimeout: this.timeoutMs, signal }) as Promise<Record<string, unknown>>;
      const t = tel();
      const server = this.peer?.address ? { address: this.peer.address, port: this.peer.port } : undefined;
      if (t) res = await t.mcpClient({ method: 'tools/call', target: name, transport: this.peer?.transport ?? 'pipe', protocolVersion: this.protocolVersion(), server, args }, send);
      else res = this.fast ? await this.fast.call(name, args, this.timeoutMs, signal) : await send();
    } catch (err) {
      const e = mapError(err, this.transport, name, this.timeoutMs, signal);
      if (this.transport.failure) {
        this.dead = e;
        // The connection is over: wait for the server to be gone, so that its last words are in.
        await this.transport.cleanup().catch(() => {});
      }
      throw withStderr(e, this.transport);
    }
    // Continuations would have us supply input or poll unattended; neither is offered.
    if (res.resultType === 'input_required' || (res.task && !Array.isArray(res.content))) {
      throw new ScError('SC_MCP_CALL_FAILED', `${name} asked for a continuation (input or a background task), which this client does not offer`);
    }
    return res;
  }

  /** The revision this connection speaks, for telemetry. */
  private protocolVersion(): string | undefined {
    return this.client.getNegotiatedProtocolVersion();
  }

  /** Closes the connection and waits for its cleanup. Idempotent. */
  close(): Promise<CloseReport> {
    this.closing ??= (async () => {
      let outcome = 'unknown';
      let discarded: Discarded | null = null;
      try {
        const r = await this.transport.cleanup();
        outcome = r.outcome;
        discarded = r.discarded ?? null;
      } catch {
        outcome = 'failed';
      } finally {
        active--;
      }
      await this.client.close().catch(() => {});
      return { outcome, peer: { ...this.guard.seen }, ...(discarded ? { discarded } : {}) };
    })();
    return this.closing;
  }
}
