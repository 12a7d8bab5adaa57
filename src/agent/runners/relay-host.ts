/*
 * The engine's side of the MCP relay a coding CLI is given instead of the
 * granted servers themselves.
 *
 *   startRelay(ticket 'runner:spawn', run dir 0700)
 *     ─► TaskTools over the shared targets (the native task's own client)
 *     ─► Unix socket <run dir>/relay.sock, a random token for this run
 *     ─► entries: one stdio server per shared target for the CLI's config:
 *        node dist/mcp-relay.js --server NAME, env {socket, token}; no command,
 *        URL or credential of the real server
 *   relay child ─► {token, server} ─► the pinned tools, labelled
 *               ─► {id, tool, arguments} ─► TaskTools.relayCall: schema check,
 *                  definition re-hash, live catalog = pin, exact approval
 *                  {server, tool, arguments}, gate 'mcp:call' ─► {id, content, is_error}
 *   close() ─► socket and relay connections closed, server connections reaped
 *
 * Every call of every CLI waits for the same approval a native call does,
 * whatever the CLI's own approval mode: the CLI cannot reach the server but
 * through this socket. A denial answers an error; nothing is sent.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { TaskContext } from '../types.js';
import { asScError } from '../../errors.js';
import { enabledTargets } from '../../client/targets.js';
import { TaskTools, type TaskToolDeps } from '../../client/task-tools.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { packageRoot } from '../../util/paths.js';
import type { SharedServer } from './servers.js';

/** One entry of a CLI's MCP config: our relay for one granted server. */
export interface RelayEntry {
  /** The key the CLI knows the server by: the name native tasks use. */
  readonly name: string;
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

export interface Relay {
  readonly entries: RelayEntry[];
  close(): Promise<void>;
}

export const RELAY_SOCKET_ENV = 'SHADOWCODE_RELAY_SOCKET';
export const RELAY_TOKEN_ENV = 'SHADOWCODE_RELAY_TOKEN';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export async function startRelay(ticket: GateTicket, deps: TaskToolDeps, ctx: TaskContext, shared: readonly SharedServer[], dir: string, lineBytes: number): Promise<Relay> {
  assertTicket(ticket, 'runner:spawn');
  const wanted = new Set(shared.map((s) => s.definition));
  const tools = new TaskTools(deps, ctx, enabledTargets(deps.db, ctx.project, deps.policy, deps.secrets).filter((t) => wanted.has(t.id)));
  const token = randomBytes(32).toString('hex');
  const socketPath = join(dir, 'relay.sock');
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => serve(sock));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });

  function serve(sock: Socket): void {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    let name: string | null = null;
    let buf = '';
    const send = (m: unknown) => {
      if (!sock.destroyed) sock.write(`${JSON.stringify(m)}\n`);
    };
    const hello = async (m: Record<string, unknown>) => {
      const given = Buffer.from(typeof m.token === 'string' ? m.token : '');
      if (given.length !== token.length || !timingSafeEqual(given, Buffer.from(token))) return sock.destroy();
      const s = shared.find((x) => x.name === m.server);
      if (!s) return send({ ok: false, error: `no server named ${JSON.stringify(String(m.server).slice(0, 128))} is shared with this run` });
      name = s.name;
      try {
        send({ ok: true, tools: await tools.relayCatalog(s.name) });
      } catch (err) {
        const e = asScError(err);
        send({ ok: false, error: `${e.code}: ${e.message}` });
      }
    };
    const call = async (m: Record<string, unknown>) => {
      try {
        const r = await tools.relayCall(name as string, String(m.tool), isObject(m.arguments) ? m.arguments : {});
        send({ id: m.id, content: r.content, is_error: r.is_error });
      } catch (err) {
        const e = asScError(err);
        send({ id: m.id, content: `${e.code}: ${e.message}`, is_error: true });
      }
    };
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > lineBytes && !buf.includes('\n')) return sock.destroy();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let m: unknown;
        try {
          m = JSON.parse(line);
        } catch {
          return sock.destroy();
        }
        if (!isObject(m)) return sock.destroy();
        if (name === null) void hello(m);
        else void call(m);
      }
    });
  }

  const script = join(packageRoot(), 'dist', 'mcp-relay.js');
  const entries = shared.map((s) => ({ name: s.name, command: process.execPath, args: [script, '--server', s.name], env: { [RELAY_SOCKET_ENV]: socketPath, [RELAY_TOKEN_ENV]: token } }));
  let closing: Promise<void> | undefined;
  return {
    entries,
    close: () =>
      (closing ??= (async () => {
        for (const s of sockets) s.destroy();
        await new Promise<void>((r) => server.close(() => r()));
        await tools.close();
      })()),
  };
}
