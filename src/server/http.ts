/*
 * `mcp serve --http`: the authenticated loopback Streamable HTTP gateway.
 *
 *   TCP front (≤ 32 open, then 503; one request each: http-accept.ts) ─► rate window
 *   (429) ─► guards: Host, Origin, query, path, bearer token, method, duplicated
 *   headers ─► body ≤ 1 MiB in 5 s, nesting ≤ body_depth, one message (a batch is 400)
 *   ─► parsed once; a tools/call is checked and prepared
 *   ─► gate.admit([http:request, tool:…]): both decisions in one committed transaction,
 *      shared with the other requests read in the same event-loop turn (group commit)
 *   ─► a plain 2026-07-28 tools/call: answered here (http-calls.ts), the same callTool
 *   ─► anything else: credentials stripped ─► SDK createMcpHandler (stateless; 2026-07-28 and
 *   legacy; the parsed body and the tool's admission handed in; its per-request server
 *   holds only the handler of the message's method) ─► response ≤ 8 MiB
 *   within 60 s ─► outcome row deferred: written with the next commit, or within
 *   audit.deferred_flush_ms / audit.deferred_rows
 *   (with telemetry on, from the decisions to the answer: the request's MCP SERVER span)
 *
 * No response byte is written and no tool runs before the decision rows commit;
 * a request in a group commit waits for the whole transaction.
 *
 * One gateway is one owner shared by every caller holding the token. Each
 * connection carries one request.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { Engine } from '../engine/engine.js';
import { ScError } from '../errors.js';
import { type Admission, admit, enforce, type GroupResult, type PendingRequest } from '../policy/gate.js';
import { httpRefusal, httpRequest } from '../policy/requests.js';
import { deferAudit, flushAudit } from '../store/audit.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { invalidRequest, nestsDeeperThan, topLevel } from '../transport/envelope.js';
import { tel, type McpRequestInfo } from '../telemetry/hooks.js';
import { RateWindow } from '../transport/rate.js';
import { buildServer } from './build.js';
import { Connection } from './connection.js';
import { type AdmittedCall, callTool, type PreparedCall, prepareCall } from './dispatch.js';
import { modernAnswer, plainHttpCall } from './http-calls.js';
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

/** What the MCP SERVER span of an HTTP request says of it: taken from the parsed body and the validated headers. */
function requestInfo(msg: unknown, call: PreparedCall | undefined, headers: IncomingMessage['headersDistinct']): McpRequestInfo {
  const m = (msg && typeof msg === 'object' ? msg : {}) as { method?: unknown; id?: unknown; params?: { _meta?: Record<string, unknown>; arguments?: unknown } };
  const meta = m.params && typeof m.params === 'object' ? m.params._meta : undefined;
  const version = (meta && typeof meta === 'object' ? meta['io.modelcontextprotocol/protocolVersion'] : undefined) ?? headers['mcp-protocol-version']?.[0];
  return {
    method: typeof m.method === 'string' ? m.method.slice(0, 128) : 'unknown',
    target: call?.name,
    id: typeof m.id === 'string' || typeof m.id === 'number' ? m.id : undefined,
    meta,
    protocolVersion: typeof version === 'string' ? version.slice(0, 32) : undefined,
    transport: 'tcp',
    args: call?.args,
  };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The request body within `maxBytes` and `deadlineMs` (the console reads its bodies the same way). */
export function readBody(req: IncomingMessage, maxBytes: number, deadlineMs: number): Promise<Buffer | Refusal | 'timeout'> {
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
  // What the per-request server needs to know of its request, found by its Request: the method of the one
  // message it carries (only that handler is set), and the tool call decided with the request, if any.
  const served = new WeakMap<Request, { readonly method?: string; readonly admitted?: AdmittedCall }>();
  const handler = createMcpHandler(
    (ctx) => {
      const s = ctx.requestInfo ? served.get(ctx.requestInfo) : undefined;
      return buildServer(conn, s?.admitted, s?.method);
    },
    { legacy: 'stateless', maxRequestBodySize: L.body_bytes, onerror: (e) => o.log(`shadowcode: ${e.message}`) },
  );
  const rate = new RateWindow(L.requests_per_second);
  let cfg: GuardConfig | undefined;
  const gate = conn.gate();
  const A = o.engine.policy.limits.audit;
  const deferBound = { flush_ms: A.deferred_flush_ms, rows: A.deferred_rows };

  // Group commit. A request's decisions wait, at most http_server.group_commit_ms, for those of the other
  // open connections (accepted with no request read yet, or a body still coming), and all are decided in
  // one transaction: at the end of the event-loop turn in which the last of them arrives (setImmediate runs
  // after the I/O that read them), or when the wait runs out. With no other connection open (one caller)
  // nothing waits. Each request waits for that commit before anything of it happens: its tool, its answer.
  // At most one request per open connection waits, so a batch is bounded by the front's connection cap.
  let waiting: { list: PendingRequest[]; settle: (r: GroupResult | Error) => void }[] = [];
  const commitWaiting = (): void => {
    const batch = waiting;
    waiting = [];
    let results: GroupResult[] | undefined;
    let failure: Error | undefined;
    try {
      results = admit(gate, { groups: batch.map((b) => b.list) });
    } catch (err) {
      // Nothing committed: every request of the batch fails, none has a ticket.
      failure = err as Error;
    }
    batch.forEach((b, i) => b.settle(failure ?? (results?.[i] as GroupResult)));
  };
  /** Requests whose body is still being read: their decisions are coming. */
  let reading = 0;
  let timer: NodeJS.Timeout | undefined;
  let soon = false;
  const commitNow = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (waiting.length) commitWaiting();
  };
  const decide = (list: PendingRequest[]): Promise<Admission[]> =>
    // With telemetry on, each request decides alone, so its guardrail spans stay under its own MCP SERVER span.
    tel() ? Promise.resolve().then(() => admit(gate, list)) : new Promise((resolve, reject) => {
      waiting.push({ list, settle: (r) => (Array.isArray(r) ? resolve(r) : reject(r)) });
      if (reading + front.unclaimed() === 0) {
        if (!soon) setImmediate(commitNow);
        soon = true;
      } else timer ??= setTimeout(commitNow, L.group_commit_ms);
    });

  /** The tools/call a body carries, checked and ready for the gate; anything else is decided by the SDK path. */
  const toolCallOf = (msg: unknown): PreparedCall | undefined => {
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return undefined;
    const m = msg as { method?: unknown; params?: { name?: unknown; arguments?: unknown } };
    if (m.method !== 'tools/call' || !m.params || typeof m.params !== 'object' || typeof m.params.name !== 'string') return undefined;
    try {
      return prepareCall(conn, m.params.name, m.params.arguments);
    } catch {
      // An unknown tool or bad arguments: callTool reports it the usual way, with no decision to record.
      return undefined;
    }
  };

  const refuse = async (res: ServerResponse, r: Refusal, method: string | undefined): Promise<void> => {
    // Refusals are audited as denied decisions; the credential is never part of what is recorded.
    await enforce(gate, httpRefusal(conn.principal, { status: r.status, reason: r.reason, method: method ?? '' }), () => undefined).catch(() => undefined);
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
    const outer = httpRequest(conn.principal, mcpMethod);
    // The body is read before the decision so that the request and the tool call it carries are decided,
    // and recorded, in one transaction; nothing is answered before that commit.
    reading++;
    const body = await readBody(req, L.body_bytes, L.body_deadline_ms).finally(() => reading--);
    let parsed: unknown;
    let call: PreparedCall | undefined;
    let early: (() => void) | undefined;
    if (body === 'timeout') early = () => void res.destroy();
    else if (!Buffer.isBuffer(body)) early = () => send(res, body.status);
    // Bounded before anything parses it: a 100,000-deep body gets an error, not a stack overflow.
    else if (nestsDeeperThan(body, L.body_depth)) {
      early = () => send(res, 400, JSON.stringify(invalidRequest(topLevel(body.toString('utf8')).id ?? null, `Invalid Request: the message nests deeper than ${L.body_depth} levels`)));
    } else {
      const unread = checkBody(body);
      if (unread) early = () => send(res, unread.status, unread.body);
      else {
        parsed = parseJson(body);
        call = toolCallOf(parsed);
      }
    }
    const telemetry = tel();
    // With telemetry on, the decisions and the answer run in the request's MCP SERVER span.
    if (telemetry && parsed !== undefined) return telemetry.mcpRequest(requestInfo(parsed, call, req.headersDistinct), answer);
    return answer();

    async function answer(): Promise<void> {
      const [request, tool] = (await decide(call ? [outer, call.request] : [outer])) as [Admission, Admission | undefined];
      if (request.denied) throw request.denied;
      const t = request.ticket;
      if (early) {
        early();
        return void deferAudit(o.engine.db(), 'http_outcome', { decision_id: t.decisionId, status: res.statusCode, bytes: 0, ms: Math.round(performance.now() - started) }, deferBound);
      }
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
        // A plain 2026-era tools/call, decided above with its request: answered here, as the SDK's handler would answer it.
        if (call && tool && !telemetry && plainHttpCall(parsed, req.headersDistinct)) {
          const text = modernAnswer(await callTool(conn, call.name, parsed.params.arguments, ac.signal, { call, admission: tool }), parsed.id);
          bytes = Buffer.byteLength(text);
          if (bytes > L.response_bytes) throw new ScError('SC_RESULT_TOO_LARGE', `response over ${L.response_bytes} bytes`);
          res.writeHead(200, { connection: 'close', 'content-type': 'application/json' });
          res.end(text);
          return;
        }
        // A body that parsed is handed over parsed (the SDK does not read it again); one that did not goes as bytes, for the SDK's own parse error.
        const init: RequestInit = { method: 'POST', headers: forwardableHeaders(req.headersDistinct), signal: ac.signal };
        if (parsed === undefined) init.body = new Uint8Array(body as Buffer);
        const request = new Request(`http://${req.headers.host}/mcp`, init);
        const method = parsed !== null && typeof parsed === 'object' && typeof (parsed as { method?: unknown }).method === 'string' ? (parsed as { method: string }).method : undefined;
        served.set(request, { ...(method !== undefined ? { method } : {}), ...(call && tool ? { admitted: { call, admission: tool } } : {}) });
        const response = await handler.fetch(request, parsed === undefined ? undefined : { parsedBody: parsed });
        const headers: Record<string, string> = { connection: 'close' };
        response.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'connection') headers[k] = v;
        });
        res.writeHead(response.status, headers);
        tel()?.annotate({ 'http.response.status_code': response.status, 'error.type': response.status >= 400 ? String(response.status) : undefined });
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
        // After the fact: the decisions are committed; the outcome rides with the next commit (bounded by policy).
        deferAudit(o.engine.db(), 'http_outcome', { decision_id: t.decisionId, status: res.statusCode, bytes, ms: Math.round(performance.now() - started) }, deferBound);
      }
    }
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
      flushAudit(o.engine.db());
      await o.engine.releaseOwner(conn.owner);
    },
  };
}
