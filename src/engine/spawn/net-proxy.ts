/*
 * The network proxy for one sandboxed start whose process may reach only the
 * hosts granted to it (sandbox allow --net, a definition's sandbox.network).
 * It runs here, outside the sandbox, and is reached only through a unix socket
 * bound into the sandbox (the bridge inside forwards to it: net-bridge.ts).
 *
 *   startNetProxy(spawn ticket, hosts) ─► private folder (0700) ─► unix socket ─► HTTP proxy
 *   CONNECT host:port (TLS and anything else)  │  GET http://host:port/… (plain http)
 *     ─► granted? the name exactly, and its port, against the grants (never a resolved address)
 *     ─► granted: resolved here, once ─► an address that is loopback, private or link-local
 *        counts only when the grant names it (localhost, or the address itself): a public
 *        name whose DNS answer points inward (rebinding) is refused
 *     ─► gate 'net:connect' {host, port, granted, private_address}: one audit row per connection
 *     ─► allowed: connect to the very address checked (no second lookup) ─► bytes both ways
 *        refused: 403 with the rule and the grant that would allow it (SC_NET_HOST_REFUSED)
 *   close() (the process is gone) ─► server and every tunnel closed, folder removed
 */
import { rmSync, mkdtempSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { createServer, type IncomingMessage, request as httpRequest, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Limits } from '../../../gen/types/limits.js';
import { asScError } from '../../errors.js';
import { enforce, type GateEnv } from '../../policy/gate.js';
import { netConnectRequest } from '../../policy/requests.js';
import { type HostPort, hostPortText, isIpLiteral, isNonPublicAddress, parseHostPort } from '../../policy/net.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { type ActiveHost, grantFor, mayPointInward } from './grants.js';

export interface ProxySpec {
  readonly hosts: readonly ActiveHost[];
  /** Decides and records each connection; its project callback reads trust at that moment. */
  readonly gate: GateEnv;
  /** Who the sandboxed process acts for (the spawn ticket's owner). */
  readonly owner: string;
  /** The project, for the refusal's hint; null for none. */
  readonly project: string | null;
  readonly limits: Limits['net_proxy'];
  /** How names are resolved (the system's resolver); a test that needs a name to answer inward gives its own. */
  readonly lookup?: (host: string) => Promise<Resolved[]>;
}

export interface NetProxy {
  /** The folder holding the socket: bound into the sandbox at the same path. */
  readonly dir: string;
  readonly socket: string;
  close(): void;
}

export interface Resolved {
  readonly address: string;
  readonly family: number;
}

/** A refusal the process inside reads: status, the reason, and what would allow it. */
function refusal(status: number, title: string, text: string): string {
  const body = `shadowcode: ${text}\n`;
  return `HTTP/1.1 ${status} ${title}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Shadowcode-Error: SC_NET_HOST_REFUSED\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(Object.assign(new Error(`${what} took longer than ${ms} ms`), { code: 'ETIMEOUT' })), ms)))]).finally(() => clearTimeout(timer));
}

/** Opens the connection the gate allowed, to the address that was checked. */
function connectTo(ticket: GateTicket, to: Resolved, port: number, ms: number): Promise<Socket> {
  assertTicket(ticket, 'net:connect');
  return new Promise((resolve, reject) => {
    const s = connect({ host: to.address, port, family: to.family });
    const timer = setTimeout(() => s.destroy(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT' })), ms);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** The decisions whose starts may reach granted hosts: a command or test, a background process, a stdio server (a runner has the whole network). */
export const PROXIED_ACTIONS = ['job:run', 'background:start', 'mcp:connect'] as const;

export function startNetProxy(ticket: GateTicket, spec: ProxySpec): NetProxy {
  assertTicket(ticket, PROXIED_ACTIONS);
  const dir = mkdtempSync(join(tmpdir(), 'shadowcode-net-'));
  const socket = join(dir, 'proxy.sock');
  const open = new Set<Duplex>();
  const track = (s: Duplex) => {
    open.add(s);
    s.once('close', () => open.delete(s));
    s.on('error', () => {});
  };

  const resolve = spec.lookup ?? ((host: string) => lookup(host, { all: true, verbatim: true }));
  const fix = (target: HostPort) => `shadowcode${spec.project ? ` --project ${spec.project}` : ''} sandbox allow --net ${hostPortText(target)}`;

  /** Decides one connection through the gate and, if allowed, opens it. */
  async function decide(target: HostPort & { port: number }, method: string): Promise<{ ok: true; upstream: Socket } | { ok: false; status: number; title: string; text: string }> {
    const grant = grantFor(spec.hosts, target);
    const named = grant !== undefined && mayPointInward(grant, target.host);
    let addresses: Resolved[] = [];
    let lookupError: string | null = null;
    // A host no grant names is never looked up: the refusal needs no answer, and the lookup itself would leak the name.
    if (grant) {
      if (isIpLiteral(target.host)) addresses = [{ address: target.host, family: target.host.includes(':') ? 6 : 4 }];
      else {
        try {
          addresses = await withDeadline(resolve(target.host), spec.limits.lookup_ms, `looking up ${target.host}`);
        } catch (err) {
          lookupError = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        }
      }
    }
    const inward = !named && addresses.some((a) => isNonPublicAddress(a.address));
    const request = netConnectRequest(
      spec.owner,
      { id: hostPortText(target), host: target.host, port: target.port, granted: grant !== undefined, inward },
      { method, spawn_decision: ticket.decisionId, ...(grant ? { grant: grant.scope } : {}), addresses: addresses.map((a) => a.address).slice(0, 16) },
    );
    try {
      const upstream = await enforce(spec.gate, request, async (t) => {
        if (lookupError || addresses.length === 0) throw Object.assign(new Error(`cannot resolve ${target.host}: ${lookupError ?? 'no address'}`), { code: 'ENOTFOUND' });
        return connectTo(t, addresses[0] as Resolved, target.port, spec.limits.connect_ms);
      });
      return { ok: true, upstream };
    } catch (err) {
      const e = asScError(err);
      if (e.code === 'SC_POLICY_DENIED') {
        const why = inward
          ? `${hostPortText(target)} resolves to ${addresses.map((a) => a.address).join(', ')}, a loopback or private address, and its grant does not say it may (a public name must not be pointed at your machine or network); if it is an intranet host, grant it with: ${fix(target)} --private`
          : `no sandbox grant names ${hostPortText(target)}; to allow it: ${fix(target)}`;
        const rules = Array.isArray(e.detail?.reasons) ? (e.detail.reasons as string[]).join(', ') : 'the policy';
        return { ok: false, status: 403, title: 'Forbidden', text: `${method} ${hostPortText(target)} refused by ${rules}: ${why} [SC_NET_HOST_REFUSED]` };
      }
      const msg = (err as Error).message ?? String(err);
      return { ok: false, status: 502, title: 'Bad Gateway', text: `${method} ${hostPortText(target)} failed: ${msg}` };
    }
  }

  const server = createServer({ maxHeaderSize: spec.limits.header_bytes, headersTimeout: spec.limits.header_deadline_ms, requestTimeout: 0 });
  server.maxConnections = spec.limits.connections;
  server.on('connection', track);
  server.on('clientError', (_err, s: Duplex) => {
    if (s.writable) s.end(refusal(400, 'Bad Request', 'the proxy could not read this request'));
    else s.destroy();
  });

  // CONNECT host:port ─► a tunnel (TLS and every other protocol).
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    const target = parseHostPort(req.url ?? '');
    if (!target || target.port === null) {
      client.end(refusal(400, 'Bad Request', `CONNECT needs HOST:PORT, got ${JSON.stringify(req.url ?? '')}`));
      return;
    }
    void decide({ ...target, port: target.port }, 'CONNECT').then((d) => {
      if (client.destroyed) {
        if (d.ok) d.upstream.destroy();
        return;
      }
      if (!d.ok) {
        client.end(refusal(d.status, d.title, d.text));
        return;
      }
      const up = d.upstream;
      track(up);
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
      up.on('close', () => client.destroy());
      client.on('close', () => up.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      client.pipe(up);
      up.pipe(client);
    }).catch(() => client.destroy()); // a socket gone meanwhile: nothing of it may take this process down
  });

  // GET http://host:port/path ─► one request, forwarded to the checked address.
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', 'x-shadowcode-error': 'SC_NET_HOST_REFUSED' }).end('shadowcode: a proxy request names an absolute http:// URL\n');
      return;
    }
    const target = url.protocol === 'http:' ? parseHostPort(url.host) : null;
    if (!target) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', 'x-shadowcode-error': 'SC_NET_HOST_REFUSED' }).end(`shadowcode: only http:// is forwarded as a request (https goes through CONNECT), not ${url.protocol}\n`);
      return;
    }
    const port = target.port ?? 80;
    void decide({ ...target, port }, req.method ?? 'GET').then((d) => {
      if (!d.ok) {
        res.writeHead(d.status, { 'content-type': 'text/plain; charset=utf-8', 'x-shadowcode-error': 'SC_NET_HOST_REFUSED', connection: 'close' }).end(`shadowcode: ${d.text}\n`);
        return;
      }
      const up = d.upstream;
      track(up);
      const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: url.host, connection: 'close' };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      // The socket is already open to the checked address: the request rides on it, with no lookup of its own.
      const out = httpRequest({ createConnection: () => up, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false });
      out.on('response', (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      out.on('error', (err) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`shadowcode: ${hostPortText({ ...target, port })} failed: ${err.message}\n`);
        else res.destroy();
      });
      req.pipe(out);
    }).catch(() => res.destroy());
  });

  server.listen(socket);
  return {
    dir,
    socket,
    close: () => {
      server.close();
      for (const s of open) s.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
