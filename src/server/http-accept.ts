/*
 * The gateway's TCP front: which connections reach the HTTP server, and for how long.
 *
 *   accept ─► fewer than `connections` open ─► HTTP server, headers within header_deadline_ms;
 *          │                                   its first request is served, and a second one
 *          │                                   pipelined behind it is never read or run
 *          └► otherwise ─► "503, Retry-After: 1, Connection: close", the request never read;
 *                          kept open busy_linger_ms so the answer is not lost to a reset,
 *                          or closed at once when busy_connections are already waiting
 *
 * Node's own maxConnections closes the socket without a word, and its header
 * deadline and connection tracking run only for an HTTP server that listens
 * itself, so this front does all three.
 */
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { assertTicket, type GateTicket } from '../ticket.js';

export interface FrontLimits {
  readonly connections: number;
  readonly busy_connections: number;
  readonly busy_linger_ms: number;
  readonly header_deadline_ms: number;
}

export interface Front {
  listen(port: number, host: string): Promise<AddressInfo>;
  /** True for the first request on its connection. A later one is left unread and gets no answer. */
  claim(req: IncomingMessage): boolean;
  /** How many connections are open with no request read from them yet (the group commit waits for these). */
  unclaimed(): number;
  /** Stops accepting, drops connections with no request yet, and gives the rest `graceMs`. */
  close(graceMs: number): Promise<void>;
}

const BUSY = 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

export function acceptConnections(ticket: GateTicket, http: HttpServer, L: FrontLimits): Front {
  assertTicket(ticket, ['cli:serve.http', 'cli:serve.console']); // the MCP gateway and the console
  // Each open connection, with its header deadline until its first request arrives.
  const open = new Map<Socket, NodeJS.Timeout | undefined>();
  let busy = 0;

  const refuse = (socket: Socket) => {
    socket.on('error', () => socket.destroy());
    if (busy >= L.busy_connections) return void socket.destroy();
    busy++;
    const linger = setTimeout(() => socket.destroy(), L.busy_linger_ms);
    socket.once('close', () => {
      busy--;
      clearTimeout(linger);
    });
    socket.end(BUSY);
  };

  // Paused on accept: nothing is read from a connection before it is let through.
  const tcp = createTcpServer({ pauseOnConnect: true }, (socket) => {
    if (open.size >= L.connections) return refuse(socket);
    open.set(socket, setTimeout(() => socket.destroy(), L.header_deadline_ms));
    socket.once('close', () => {
      clearTimeout(open.get(socket));
      open.delete(socket);
    });
    http.emit('connection', socket);
    socket.resume();
  });

  return {
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, host, () => {
          tcp.off('error', reject);
          // From here an error is a failed accept (descriptors ran out): that one connection is lost, the gateway goes on.
          tcp.on('error', () => undefined);
          resolve(tcp.address() as AddressInfo);
        });
      }),
    unclaimed() {
      let n = 0;
      for (const waiting of open.values()) if (waiting !== undefined) n++;
      return n;
    },
    claim(req) {
      const socket = req.socket;
      if (!open.has(socket) || open.get(socket) === undefined) {
        // Pipelined behind the first: stop reading; the socket closes when the first answer is sent.
        socket.pause();
        return false;
      }
      clearTimeout(open.get(socket));
      open.set(socket, undefined);
      return true;
    },
    async close(graceMs) {
      const closed = new Promise<void>((r) => tcp.close(() => r()));
      for (const [socket, waiting] of open) if (waiting !== undefined) socket.destroy();
      const force = setTimeout(() => {
        for (const socket of open.keys()) socket.destroy();
      }, graceMs).unref();
      await closed;
      clearTimeout(force);
    },
  };
}
