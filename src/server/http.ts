/*
 * `mcp serve --http`: the authenticated loopback Streamable HTTP gateway.
 *
 *   TCP front (≤ 32 open, then 503; one request each: http-accept.ts) ─► rate window
 *   (429) ─► guards: Host, Origin, query, path, bearer token, method, duplicated
 *   headers ─► gate (audited) ─► body ≤ 1 MiB in 5 s, nesting ≤ body_depth, one message (a batch is 400)
 *   ─► credentials stripped ─► SDK createMcpHandler (stateless; 2026-07-28 and
 *   legacy) ─► response ≤ 8 MiB within 60 s ─► outcome audited
 *
 * One gateway is one owner shared by every caller holding the token. Each
 * connection carries one request.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { Engine } from '../engine/engine.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { appendAudit } from '../store/audit.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { invalidRequest, nestsDeeperThan, topLevel } from '../transport/envelope.js';
import { RateWindow } from '../transport/rate.js';
import { buildServer } from './build.js';
import { Connection } from './connection.js';
import { acceptConnections } from './http-accept.js';
import { type Bind, loopbackHosts, loopbackOrigins, proxyAllowances } from './http-config.js';
import { checkBearer, checkBody, checkHeaders, checkHost, checkMethod, checkOrigin, checkTarget, digest, forwardableHeaders, type GuardConfig, type Refusal } from './http-guards.js';

export interface HttpGatewayOptions {
  readonly engine: Engine;
  readonly project: string;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
  readonly bind: Bind;
  readonly allowedHosts: readonly string[];
  readonly token: string;
  readonly log: (line: string) => void;
}

export interface HttpGateway {
  readonly url: string;
  readonly port: number;
  readonly owner: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body = ''): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...(status === 429 ? { 'retry-after': '1' } : {}) });
  res.end(body);
}

function readBody(req: IncomingMessage, maxBytes: number, deadlineMs: number): Promise<Buffer | Refusal | 'timeout'> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) return resolve({ status: 413, reason: 'request body too large' });
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => resolve('timeout'), deadlineMs);
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        clearTimeout(timer);
        req.removeAllListeners('data');
        resolve({ status: 413, reason: 'request body too large' });
      } else chunks.push(c);
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve('timeout');
    });
  });
}

export async function startHttpGateway(ticket: GateTicket, o: HttpGatewayOptions): Promise<HttpGateway> {
  assertTicket(ticket, 'cli:serve.http');
  const L = o.engine.policy.limits.http_server;
  const conn = new Connection({ transport: 'http', project: o.project, allowWrite: o.allowWrite, allowApprovals: o.allowApprovals, engine: o.engine });
  const handler = createMcpHandler(() => buildServer(conn), { legacy: 'stateless', maxRequestBodySize: L.body_bytes, onerror: (e) => o.log(`shadowcode: ${e.message}`) });
  const rate = new RateWindow(L.requests_per_second);
  let cfg: GuardConfig | undefined;
  const gate = conn.gate();

  const refuse = async (res: ServerResponse, r: Refusal, method: string | undefined): Promise<void> => {
    // Refusals are audited as denied decisions; the credential is never part of what is recorded.
    await enforce(gate, conn.request('http:refused', { args: { status: r.status, reason: r.reason, method: method ?? '' } }), () => undefined).catch(() => undefined);
    send(res, r.status);
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, guards: GuardConfig): Promise<void> => {
    const refusal =
      checkHost(req.headers, guards) ??
      checkOrigin(req.headers, guards) ??
      checkTarget(req.url ?? '') ??
      checkBearer(req.headers, guards) ??
      checkMethod(req.method) ??
      checkHeaders(req.headersDistinct, req.headers.host);
    if (refusal) return refuse(res, refusal, req.method);
    const started = performance.now();
    const mcpMethod = req.headersDistinct['mcp-method']?.[0] ?? '';
    await enforce(gate, conn.request('http:request', { args: { method: 'POST', mcp_method: mcpMethod.slice(0, 128) } }), async (t) => {
      const body = await readBody(req, L.body_bytes, L.body_deadline_ms);
      if (body === 'timeout') return void res.destroy();
      if (!Buffer.isBuffer(body)) return send(res, body.status);
      // Bounded before anything parses it: a 100,000-deep body gets an error, not a stack overflow.
      if (nestsDeeperThan(body, L.body_depth)) {
        return send(res, 400, JSON.stringify(invalidRequest(topLevel(body.toString('utf8')).id ?? null, `Invalid Request: the message nests deeper than ${L.body_depth} levels`)));
      }
      const unread = checkBody(body);
      if (unread) return send(res, unread.status, unread.body);
      const ac = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) ac.abort();
      });
      const deadline = setTimeout(() => {
        ac.abort();
        res.destroy();
      }, L.request_deadline_ms);
      let bytes = 0;
      try {
        const request = new Request(`http://${req.headers.host}/mcp`, { method: 'POST', headers: forwardableHeaders(req.headersDistinct), body: new Uint8Array(body), signal: ac.signal });
        const response = await handler.fetch(request);
        const headers: Record<string, string> = { connection: 'close' };
        response.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'connection') headers[k] = v;
        });
        res.writeHead(response.status, headers);
        if (response.body) {
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            bytes += chunk.byteLength;
            // INVARIANT: headers are already sent, so an over-size response can only be cut off, never relabelled.
            if (bytes > L.response_bytes) throw new ScError('SC_RESULT_TOO_LARGE', `response over ${L.response_bytes} bytes`);
            if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
          }
        }
        res.end();
      } catch (err) {
        o.log(`shadowcode: request failed: ${(err as Error).message}`);
        res.destroy();
      } finally {
        clearTimeout(deadline);
        appendAudit(o.engine.db(), 'http_outcome', { decision_id: t.decisionId, status: res.statusCode, bytes, ms: Math.round(performance.now() - started) });
      }
    });
  };

  // Deadlines for headers and the body, and the connection cap, are the front's and readBody's.
  const server = createServer({ keepAliveTimeout: 1, maxHeaderSize: L.header_bytes }, (req, res) => {
    if (!front.claim(req)) return;
    if (!cfg) return send(res, 503);
    if (!rate.hit()) return send(res, 429);
    serve(req, res, cfg).catch((err) => {
      o.log(`shadowcode: ${(err as Error).message}`);
      send(res, 500);
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  const front = acceptConnections(ticket, server, L);

  const { port } = await front.listen(o.bind.port, o.bind.host).catch((err: NodeJS.ErrnoException) => {
    throw new ScError('SC_HTTP_LISTEN_FAILED', `cannot listen on ${o.bind.host}:${o.bind.port}: ${err.code ?? err.message}`);
  });
  const proxy = proxyAllowances(o.allowedHosts);
  cfg = {
    hosts: new Set(o.allowedHosts.length ? proxy.hosts : loopbackHosts(o.bind, port)),
    // Only the gateway's own origin: no page is served from it, and the token is still required.
    origins: new Set(o.allowedHosts.length ? proxy.origins : loopbackOrigins(o.bind, port)),
    tokenDigest: digest(o.token),
  };
  const ip = o.bind.host.includes(':') ? `[${o.bind.host}]` : o.bind.host;
  return {
    url: `http://${ip}:${port}/mcp`,
    port,
    owner: conn.owner,
    close: async () => {
      // In-flight requests get the request deadline to finish; idle sockets go now.
      await front.close(L.request_deadline_ms);
      await handler.close();
      await o.engine.releaseOwner(conn.owner);
    },
  };
}
