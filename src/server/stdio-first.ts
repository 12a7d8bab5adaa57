/*
 * The first answers of a stdio connection, given before the SDK is loaded.
 *
 *   message ─► initialize of the plain 2025 shape below ─► answered here, as the SDK's Server answers it
 *           ─► notifications/initialized, after that    ─► kept
 *           ─► tools/list without params, after that     ─► answered here (listing.ts: what buildServer serves)
 *           ─► a plain tools/call, after that            ─► taken past the SDK (stdio-calls.ts), which stays unloaded
 *           ─► anything else                             ─► hand over, this message first in line
 *   hand over (on such a message, or once the connection opened here has been quiet a while):
 *     load the SDK ─► serveStdio on a relay ─► replay initialize and initialized (the SDK's answer to
 *     the replayed initialize is dropped: the client has ours) ─► what arrived meanwhile, in order
 *     ─► from then on every message goes straight to the SDK, which pins the era as before,
 *        except a plain tools/call on a 2025-era connection opened here (the SDK accepted the
 *        initialize, or has not been needed yet), or once it answered a 2026-07-28 request other
 *        than server/discover (stdio-calls.ts)
 *
 * Loading the SDK (zod schemas for every protocol revision) is about a quarter of a cold start,
 * and a host waits for the tool list before it shows the server ready. Only a message whose every
 * field is known to pass the SDK's own checks is answered here (test/server/stdio-first.test.ts
 * compares each such answer with the SDK's, byte for byte); anything else, however close, goes to
 * the SDK. Nothing here runs a tool or decides anything: a tools/call reaches the gate through the
 * SDK's handler or through stdio-calls.ts, which calls the same dispatch.
 *
 * Why a plain call does not wait for the SDK: on such a connection the SDK would hand it to our
 * handler unchanged (stdio-calls.ts compares the answers byte for byte), so the SDK's load, a
 * third of the CPU a short session (initialize, tools/list, a few calls) spends, bought nothing
 * there. A host that idles (between turns) still gets the SDK loaded then (PRELOAD_IDLE_MS),
 * before its first ping or resources/list, as before.
 *
 * With telemetry on, a tools/list answered here is still a SERVER span, as the SDK's handler
 * would record it (build.ts, traced); initialize never is, here or in the SDK (its protocol layer
 * answers it, not a handler of ours).
 */
import type { JSONRPCMessage, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { tel } from '../telemetry/hooks.js';
import { isPlainObject as isPlain, isRequestId as isId } from '../transport/envelope.js';
import { MODERN, only, plainCapabilities, PV } from './call-shapes.js';
import { type CallFn, StdioCalls } from './stdio-calls.js';
import { PROTOCOL_REVISIONS } from '../version.js';
import { capabilities, INSTRUCTIONS, SERVER_INFO, toolList } from './listing.js';

type Msg = Record<string, unknown>;
type Id = string | number;

/** The 2025-era revisions: an initialize that asks for one of them is answered with it. */
export const LEGACY_REVISIONS: readonly string[] = PROTOCOL_REVISIONS.filter((r) => r < '2026');

/**
 * How long a connection opened here stays quiet (no message since the last) before the SDK
 * loads anyway: a host idling between turns then has it ready for a later ping or resource
 * read, while a short session that only lists and calls ends without ever paying for it.
 */
export const PRELOAD_IDLE_MS = 1000;


function plainInitialize(m: Msg): m is Msg & { id: Id; params: { protocolVersion: string } } {
  const p = m.params;
  if (!isId(m.id) || !isPlain(p) || !only(p, ['protocolVersion', 'capabilities', 'clientInfo'])) return false;
  if (typeof p.protocolVersion !== 'string' || !LEGACY_REVISIONS.includes(p.protocolVersion)) return false;
  const info = p.clientInfo;
  if (!isPlain(info) || !only(info, ['name', 'version', 'title']) || typeof info.name !== 'string' || typeof info.version !== 'string') return false;
  if (info.title !== undefined && typeof info.title !== 'string') return false;
  return plainCapabilities(p.capabilities);
}

/**
 * Our answer to an opening message, or undefined when the SDK must answer it.
 * `initialized`: whether an initialize was already answered here.
 */
export function firstAnswer(m: Msg, initialized: boolean): JSONRPCMessage | undefined {
  if (m.method === 'initialize' && !initialized && plainInitialize(m)) {
    const result = { protocolVersion: m.params.protocolVersion, capabilities: capabilities(), serverInfo: { ...SERVER_INFO }, instructions: INSTRUCTIONS };
    return { result, jsonrpc: '2.0', id: m.id } as unknown as JSONRPCMessage;
  }
  if (m.method === 'tools/list' && initialized && isId(m.id) && (m.params === undefined || (isPlain(m.params) && Object.keys(m.params).length === 0))) {
    return { result: { tools: toolList() }, jsonrpc: '2.0', id: m.id } as unknown as JSONRPCMessage;
  }
  return undefined;
}

/** A request in the 2026-07-28 revision's envelope, other than the discovery that leaves the era open. */
function modernRequest(m: Msg): m is Msg & { id: Id } {
  if (!isId(m.id) || typeof m.method !== 'string' || m.method === 'server/discover' || !isPlain(m.params)) return false;
  const meta = m.params._meta;
  return isPlain(meta) && meta[PV] === MODERN;
}

/** What the SDK is served on: the stdio transport, already started, and a way to replay a request unanswered. */
class Relay implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private drop: { id: Id; done: (answer: Msg) => void } | undefined;
  /** A request whose answer tells something of the connection (stdio-first's pin watch): seen on its way out. */
  watched: { readonly id: Id; readonly seen: (answer: Msg) => void } | undefined;

  constructor(private readonly wire: Transport) {}

  async start(): Promise<void> {}

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const m = message as unknown as Msg;
    const w = this.watched;
    if (w && m.method === undefined && m.id === w.id) {
      this.watched = undefined;
      w.seen(m);
    }
    const d = this.drop;
    if (d && m.method === undefined && m.id === d.id && ('result' in m || 'error' in m)) {
      this.drop = undefined;
      d.done(m);
      return Promise.resolve();
    }
    return this.wire.send(message, options);
  }

  close(): Promise<void> {
    return this.wire.close();
  }

  /** Delivers a request whose answer the client already has; resolves with the SDK's answer, which goes nowhere. */
  replay(m: Msg & { id: Id }, deadlineMs: number): Promise<Msg | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drop = undefined;
        resolve(undefined);
      }, deadlineMs);
      this.drop = {
        id: m.id,
        done: (answer) => {
          clearTimeout(timer);
          resolve(answer);
        },
      };
      this.onmessage?.(m as unknown as JSONRPCMessage);
    });
  }
}

export interface Served {
  close(): Promise<void>;
  /** Runs a tools/call as the SDK's handler would: given, a plain one is answered past the SDK (stdio-calls.ts). */
  readonly call?: CallFn;
}

export class StdioOpening {
  private phase: 'early' | 'loading' | 'through' = 'early';
  private closed = false;
  private initialized = false;
  /** initialize and initialized as the client sent them, for the SDK once it is there. */
  private readonly said: Msg[] = [];
  /** Messages received while the SDK loads, in order. */
  private readonly waiting: Msg[] = [];
  private readonly relay: Relay;
  private loading: Promise<Served | undefined> | undefined;
  /** Plain tools/call messages answered past the SDK, once it has accepted the initialize answered here. */
  private calls: StdioCalls | undefined;
  /**
   * Plain tools/call messages answered past the SDK before it is loaded (a 2025-era connection
   * opened here); they become `calls` once the SDK accepts the replayed initialize.
   */
  private early: StdioCalls | undefined;
  /** Loads the SDK once the connection opened here has been quiet for PRELOAD_IDLE_MS. */
  private idle: NodeJS.Timeout | undefined;
  /** How a call is run past the SDK, kept until the connection shows its era (a 2026-07-28 one, watchPin). */
  private call: CallFn | undefined;

  /**
   * `serve` loads the SDK and serves on the transport it is given (serveStdio). `deadlineMs`
   * bounds the wait for the SDK's answer to the replayed initialize. `call`, given, runs a plain
   * tools/call of a connection opened here without the SDK (the same dispatch as Served.call).
   */
  constructor(
    private readonly transport: Transport,
    private readonly serve: (wire: Transport) => Promise<Served>,
    private readonly log: (line: string) => void,
    private readonly deadlineMs: number,
    private readonly callEarly?: CallFn,
  ) {
    this.relay = new Relay(transport);
    transport.onmessage = (m) => this.receive(m as unknown as Msg);
    transport.onerror = (e) => this.relay.onerror?.(e);
    transport.onclose = () => {
      this.closed = true;
      clearTimeout(this.idle);
      this.calls?.end();
      this.early?.end();
      if (this.phase === 'through') this.relay.onclose?.();
    };
  }

  private receive(m: Msg): void {
    if (this.phase === 'through') {
      if (this.calls) {
        if (this.calls.take(m)) return;
        this.calls.cancelled(m);
      } else {
        // Calls taken before an SDK that then refused the initialize: still cancellable.
        this.early?.cancelled(m);
        if (this.call && !this.relay.watched && modernRequest(m)) this.watchPin(m.id);
      }
      return this.relay.onmessage?.(m as unknown as JSONRPCMessage);
    }
    if (this.phase === 'loading') return void this.waiting.push(m);
    this.idle?.refresh();
    if (this.early) {
      if (this.early.take(m)) return;
      // A cancellation of a call taken here is for it alone: no call of the SDK's can be running yet.
      if (this.early.cancelled(m)) return;
    }
    const answer = firstAnswer(m, this.initialized);
    if (answer) {
      if (m.method === 'initialize') {
        this.initialized = true;
        this.said.push(m);
        const p = m.params as { protocolVersion?: string };
        if (this.callEarly) {
          this.early = new StdioCalls(this.transport, this.callEarly, this.log, 'legacy', p.protocolVersion);
          // The SDK loads when a message needs it, or once the client goes quiet.
          this.idle = setTimeout(() => void this.handOver(), PRELOAD_IDLE_MS).unref();
        }
      } else if (!this.callEarly) {
        // The tool list is out: load the SDK now, before the first call needs it.
        setImmediate(() => void this.handOver());
      }
      const sent = () => this.transport.send(answer);
      const t = m.method === 'tools/list' ? tel() : undefined;
      const protocolVersion = (this.said[0]?.params as { protocolVersion?: string } | undefined)?.protocolVersion;
      void (t ? t.mcpRequest({ method: 'tools/list', id: m.id as Id, protocolVersion, transport: 'pipe' }, sent) : sent()).catch((e: Error) => this.log(`shadowcode: ${e.message}`));
      return;
    }
    if (m.method === 'notifications/initialized' && this.initialized && this.said.length === 1 && m.id === undefined) return void this.said.push(m);
    this.waiting.push(m);
    void this.handOver();
  }

  /**
   * A 2026-07-28 request other than server/discover pins the SDK's connection to that revision
   * when the SDK takes it; an answer stamped with that revision's resultType shows it did. From
   * then on, plain calls of that revision are taken past the SDK.
   */
  private watchPin(id: Id): void {
    const call = this.call;
    this.relay.watched = {
      id,
      seen: (answer) => {
        const r = answer.result;
        if (call && !this.calls && !this.closed && isPlain(r) && r.resultType === 'complete') this.calls = new StdioCalls(this.transport, call, this.log, 'modern');
      },
    };
  }

  /** Loads the SDK once, tells it what the client said, then lets everything through. */
  private handOver(): Promise<Served | undefined> {
    return (this.loading ??= this.load());
  }

  private async load(): Promise<Served | undefined> {
    clearTimeout(this.idle);
    if (this.closed) return undefined;
    this.phase = 'loading';
    let served: Served;
    try {
      served = await this.serve(this.relay);
    } catch (err) {
      this.log(`shadowcode: cannot start the MCP server: ${(err as Error).message}`);
      await this.transport.close();
      return undefined;
    }
    let accepted = false;
    for (const m of this.said) {
      if (!isId(m.id)) {
        this.relay.onmessage?.(m as unknown as JSONRPCMessage);
        continue;
      }
      // Waited for, so that a later request reusing this id is never taken for the replay's answer.
      const answer = await this.relay.replay(m as Msg & { id: Id }, this.deadlineMs);
      if (!answer || 'error' in answer) this.log(`shadowcode: the MCP server did not accept the initialize already answered: ${JSON.stringify(answer?.error ?? 'no answer').slice(0, 200)}`);
      else accepted = true;
    }
    // On a 2025-era connection opened here (an initialize answered above, the SDK agreeing); a 2026-era one is watched for (watchPin).
    // Calls already taken before the SDK loaded go on as they were: the same dispatch either way.
    if (accepted && this.early) this.calls = this.early;
    else if (accepted && served.call && !this.closed) this.calls = new StdioCalls(this.transport, served.call, this.log, 'legacy', (this.said[0]?.params as { protocolVersion?: string } | undefined)?.protocolVersion);
    else if (!accepted) this.call = served.call;
    this.phase = 'through';
    // In order, and before anything newer: no message can arrive between these lines.
    for (const m of this.waiting.splice(0)) {
      // A cancellation that came while the SDK loaded may be for a call taken before it: the SDK never saw that call.
      this.early?.cancelled(m);
      if (this.call && !this.relay.watched && modernRequest(m)) this.watchPin(m.id);
      this.relay.onmessage?.(m as unknown as JSONRPCMessage);
    }
    if (this.closed) this.relay.onclose?.();
    return served;
  }

  /** After the transport is done: closes the SDK's side if it was started. */
  async close(): Promise<void> {
    this.closed = true;
    const served = await this.loading;
    await served?.close();
  }
}
