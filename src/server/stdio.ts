/*
 * `mcp serve` over stdio: one connection, one owner, until end of input or a
 * protocol failure; then what the connection owns is cleaned up and the
 * temporary engine closes.
 *
 *   BoundedStdioTransport ─► StdioOpening (initialize and tools/list answered before the
 *   SDK loads; stdio-first.ts) ─► serveStdio (SDK: 2026-07-28 or 2025 era, pinned by
 *   the first message) ─► buildServer(connection) ─► dispatch ─► gate
 *                                 └─► a plain 2025-era tools/call (stdio-calls.ts), before the
 *                                     SDK loads or after ─► dispatch ─► gate
 */
import type { Engine } from '../engine/engine.js';
import { Connection } from './connection.js';
import { StdioOpening } from './stdio-first.js';
import { BoundedStdioTransport } from './stdio-transport.js';
import { onStopSignal } from '../util/stop-signals.js';

export interface StdioServeOptions {
  readonly engine: Engine;
  readonly project: string;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
  readonly stdin: NodeJS.ReadableStream & import('node:stream').Readable;
  readonly stdout: import('node:stream').Writable;
  readonly log: (line: string) => void;
  /** SIGINT, SIGTERM and SIGHUP end the connection (the CLI); an embedding host passes false and aborts `stop` instead. */
  readonly signals?: boolean;
  /** Aborting it ends the connection as end of input does. */
  readonly stop?: AbortSignal;
  /** The connection's owner label (the library names its servers); else a fresh one. */
  readonly owner?: string;
}

/** Serves until the connection ends; resolves with the process exit code. */
export async function serveOverStdio(o: StdioServeOptions): Promise<number> {
  const conn = new Connection({ transport: 'stdio', project: o.project, allowWrite: o.allowWrite, allowApprovals: o.allowApprovals, engine: o.engine, ...(o.owner ? { owner: o.owner } : {}) });
  const limits = o.engine.policy.limits.stdio_server;
  const transport = new BoundedStdioTransport(o.stdin, o.stdout, limits, o.log);
  // The SDK and our server on it are loaded when the opening needs them, not before the first answers.
  const opening = new StdioOpening(
    transport,
    async (wire) => {
      const [{ serveConnection }, { callTool }] = await Promise.all([import('./build.js'), import('./dispatch.js')]);
      const served = serveConnection(conn, wire, o.log);
      return { close: () => served.close(), call: (name, args, signal) => callTool(conn, name, args, signal) };
    },
    o.log,
    limits.operation_deadline_ms,
    // A plain call before the SDK is needed: dispatch alone (it reaches no SDK code), so a short session never loads the SDK.
    async (name, args, signal) => (await import('./dispatch.js')).callTool(conn, name, args, signal),
  );
  await transport.start();
  // A signal ends the connection the same way end of input does: owned jobs are cancelled and reaped first.
  const stop = () => void transport.close();
  const offSignals = o.signals !== false ? onStopSignal(stop) : () => {};
  if (o.stop?.aborted) stop();
  o.stop?.addEventListener('abort', stop, { once: true });
  const reason = await transport.done;
  o.stop?.removeEventListener('abort', stop);
  // Still listened for until the cleanup is done: a host that closes our input and then sends
  // SIGTERM must not end us halfway, with the jobs' placeholders and registry claim left behind.
  try {
    await opening.close();
    // The connection's jobs end with it; other owners' work in a shared engine is not touched.
    await o.engine.releaseOwner(conn.owner);
    await o.engine.shutdown();
  } finally {
    offSignals();
  }
  return reason === 'end of input' || reason === 'closed by the server' ? 0 : 1;
}
