/*
 * A steady-state tools/call over stdio, answered without the SDK's generic request path.
 *
 *   message (after the opening, stdio-first.ts) ─► a plain tools/call of the connection's era?
 *       yes ─► callTool(conn, name, arguments, signal): the same dispatch, gate and audited
 *              decision as the SDK's handler runs ─► { result, jsonrpc, id } ─► stdout
 *              (2026-07-28: the result stamped as the SDK stamps it, call-shapes.ts)
 *       no  ─► the SDK, as before
 *   notifications/cancelled naming a call taken here ─► its signal aborts and no answer
 *              is sent (what the SDK does for its own); the SDK, once loaded, is told too
 *   end of the connection ─► every call taken here is aborted
 *
 * Why: on a paced call the SDK's path around our handler (era routing, zod type guards on
 * every message, a request context, the tools/call wrapper's request and result checks)
 * cost about 350 µs, more than the audited decision itself (docs/performance.md). Only a
 * message the SDK would hand our handler unchanged is taken: an id, `params` holding a
 * string `name` and, if any, a plain-object `arguments`, nothing else (no `_meta`, so no
 * progress token and no 2026 envelope), on a connection whose 2025-era initialize was
 * answered by stdio-first (of a shape the SDK accepts, stdio-first.test.ts) and not refused
 * by the SDK: taken before the SDK is loaded too, so a short session never loads it. With
 * telemetry on, such a call gets the SERVER span the SDK handler's wrapper would give it
 * (build.ts traced), with the same attributes. On a connection the SDK pinned to 2026-07-28 (it
 * answered a request of that revision other than server/discover), the same with the
 * revision's envelope in `_meta` and nothing else (call-shapes.ts plainModernCall).
 * Everything else, however close, goes to the SDK.
 * test/server/stdio-calls.test.ts compares each answer with the SDK's, byte for byte.
 */
import type { CallToolResult, JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { tel } from '../telemetry/hooks.js';
import { inSchemaOrder, MODERN, modernResult, type PlainCall, plainModernCall } from './call-shapes.js';
// Ids a string or an integer, as the SDK accepts them (the transport answers any other before this).
import { isPlainObject as isPlain, isRequestId as isId } from '../transport/envelope.js';

type Msg = Record<string, unknown>;
type Id = string | number;

/** Runs one tool call as the SDK's tools/call handler would (src/server/dispatch.ts callTool). */
export type CallFn = (name: string, args: Record<string, unknown> | undefined, signal: AbortSignal) => Promise<CallToolResult>;


/** A tools/call the SDK would pass to our handler as it is. */
export function plainCall(m: Msg): m is Msg & { id: Id; params: { name: string; arguments?: Record<string, unknown> } } {
  if (m.method !== 'tools/call' || m.jsonrpc !== '2.0' || !isId(m.id)) return false;
  for (const k in m) if (k !== 'jsonrpc' && k !== 'id' && k !== 'method' && k !== 'params') return false;
  const p = m.params;
  if (!isPlain(p) || typeof p.name !== 'string') return false;
  for (const k in p) if (k !== 'name' && k !== 'arguments') return false;
  return p.arguments === undefined || isPlain(p.arguments);
}

/** The calls taken past the SDK on one connection. */
export class StdioCalls {
  private readonly running = new Map<Id, AbortController>();
  private ended = false;

  constructor(
    private readonly wire: Transport,
    private readonly call: CallFn,
    private readonly log: (line: string) => void,
    /** The revision the SDK pinned the connection to: what a plain call looks like, and how its answer is written. */
    private readonly era: 'legacy' | 'modern' = 'legacy',
    /** The revision the connection's 2025-era initialize agreed on (a span's mcp.protocol.version). */
    private readonly agreed?: string,
  ) {}

  /** Takes the message if it is a plain tools/call (true), else leaves it to the SDK (false). */
  take(m: Msg): boolean {
    if (this.ended || !(this.era === 'modern' ? plainModernCall(m) : plainCall(m)) || this.running.has(m.id as Id)) return false;
    return this.run(m as PlainCall);
  }

  private run(m: PlainCall): boolean {
    const { id, params } = m;
    const ctl = new AbortController();
    this.running.set(id, ctl);
    const go = () => this.call(params.name, params.arguments, ctl.signal);
    const t = tel();
    // As the SDK's path records it: the modern envelope's revision, else the one the initialize agreed on.
    const traced = t ? t.mcpRequest({ method: 'tools/call', target: params.name, id, meta: (params as { _meta?: unknown })._meta, protocolVersion: this.era === 'modern' ? MODERN : this.agreed, transport: 'pipe', args: params.arguments }, go) : go();
    traced
      .then((result) => {
        if (this.running.get(id) === ctl) this.running.delete(id);
        if (ctl.signal.aborted) return;
        return this.wire.send({ result: this.era === 'modern' ? modernResult(result) : inSchemaOrder(result), jsonrpc: '2.0', id } as unknown as JSONRPCMessage);
      })
      .catch((e: Error) => this.log(`shadowcode: ${e.message}`));
    return true;
  }

  /** A cancellation of a call taken here aborts it (true); once the SDK is loaded, the notification still goes on to it. */
  cancelled(m: Msg): boolean {
    if (m.method !== 'notifications/cancelled' || !isPlain(m.params)) return false;
    const id = m.params.requestId;
    if (!isId(id)) return false;
    const ctl = this.running.get(id);
    if (!ctl) return false;
    this.running.delete(id);
    // The reason as the client gave it, as the SDK passes it on for its own calls.
    ctl.abort(m.params.reason);
    return true;
  }

  /** The connection is over: nothing taken here is answered any more. */
  end(): void {
    this.ended = true;
    for (const ctl of this.running.values()) ctl.abort(new Error('the connection ended'));
    this.running.clear();
  }
}
