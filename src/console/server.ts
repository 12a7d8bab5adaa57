/*
 * The console's loopback HTTP server: one page for the profile, its live feed and its actions.
 *
 *   TCP front (console.connections, header deadline; the gateway's http-accept.ts) ─► rate window
 *   ─► exact Host ─► single credential headers ─► Origin: exact on every POST, and on any
 *      request that sends one ─► /console/… only
 *   ─► GET /console/?code=C: a live one-time code is spent for an HttpOnly, SameSite=Strict
 *      cookie scoped to /console, then 303 to /console/ (the code leaves the address bar)
 *   ─► the page's files (no data in them) ─► everything else needs the cookie
 *   ─► GET api/events (the feed), GET api/ROUTE, POST api/ROUTE (JSON ≤ console.body_bytes)
 *
 * Every response carries the CSP and the other headers below. Refusals are audited
 * (http:refused, channel console) as the gateway's are.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { asScError, ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { acceptConnections } from '../server/http-accept.js';
import { checkHeaders, checkHost, digest, normalOrigin, type Refusal } from '../server/http-guards.js';
import { readBody } from '../server/http.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { RateWindow } from '../transport/rate.js';
import { packageRoot } from '../util/paths.js';
import { type Api, get, post } from './api.js';
import { removeRecord, spendCode, startRecord } from './codes.js';
import { Feed } from './feed.js';

export interface ConsoleLimits {
  readonly port: number;
  readonly code_ttl_ms: number;
  readonly session_ttl_ms: number;
  readonly sessions: number;
  readonly connections: number;
  readonly busy_connections: number;
  readonly busy_linger_ms: number;
  readonly header_deadline_ms: number;
  readonly header_bytes: number;
  readonly body_bytes: number;
  readonly body_deadline_ms: number;
  readonly requests_per_second: number;
  readonly sse_streams: number;
  readonly sse_poll_ms: number;
  readonly sse_keepalive_ms: number;
  readonly sse_events_per_tick: number;
  readonly event_body_chars: number;
  readonly audit_page_size: number;
}

export interface ConsoleOptions {
  readonly api: Api;
  readonly profileDir: string;
  readonly port: number;
  readonly limits: ConsoleLimits;
  readonly pageSize: number;
  readonly log: (line: string) => void;
}

export interface ConsoleHandle {
  /** The address to open, with its one-time code. */
  readonly url: string;
  /** The page's address without a code. */
  readonly base: string;
  readonly port: number;
  close(): Promise<void>;
}

export const COOKIE = 'sc_console';
const BASE = '/console';

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const ASSETS: Record<string, string> = { 'app.js': 'text/javascript; charset=utf-8', 'style.css': 'text/css; charset=utf-8', 'icon.svg': 'image/svg+xml', 'index.html': 'text/html; charset=utf-8' };

const STATUS: Record<string, number> = { SC_APPROVAL_CHANGED: 409, SC_APPROVAL_NOT_PENDING: 409, SC_APPROVAL_NOT_FOUND: 404, SC_JOB_NOT_FOUND: 404, SC_JOB_NOT_RUNNING: 409, SC_TASK_NOT_FOUND: 404, SC_POLICY_DENIED: 403, SC_ROLLBACK_CONFLICT: 409, SC_ALREADY_ROLLED_BACK: 409 };

/** The page's files as built into dist/console (the build bundles src/console/page there). */
function loadAssets(): Map<string, Buffer> {
  const dir = join(packageRoot(), 'dist', 'console');
  const out = new Map<string, Buffer>();
  for (const name of Object.keys(ASSETS)) {
    const file = join(dir, name);
    if (!existsSync(file)) throw new ScError('SC_INTERNAL', `the console page is missing (${file}); run npm run build`);
    out.set(name, readFileSync(file));
  }
  return out;
}

function cookieOf(req: IncomingMessage): string | undefined {
  const raw = req.headers.cookie;
  if (typeof raw !== 'string') return undefined;
  for (const part of raw.split(';')) {
    const [k, v] = part.trim().split('=');
    if (k === COOKIE && v) return v;
  }
  return undefined;
}

export async function startConsole(ticket: GateTicket, o: ConsoleOptions): Promise<ConsoleHandle> {
  assertTicket(ticket, 'cli:serve.console');
  const L = o.limits;
  const assets = loadAssets();
  const sessions = new Map<string, number>(); // sha256(cookie) hex ─► expiry
  const rate = new RateWindow(L.requests_per_second);
  const feed = new Feed(() => o.api.profile.db(), { ...L, page_size: o.pageSize }, o.log);
  let hosts = new Set<string>();
  let origins = new Set<string>();

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, connection: 'close', ...extra });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, data: unknown) => send(res, status, 'application/json', JSON.stringify(data));
  const refuse = async (res: ServerResponse, status: Refusal['status'], reason: string, method: string | undefined) => {
    const ctx = o.api.profile;
    await enforce(ctx.gate, ctx.request('http:refused', { args: { status, reason, method: method ?? '', channel: 'console' } }), () => undefined).catch(() => undefined);
    json(res, status, { error: { code: 'SC_CONSOLE_REFUSED', message: reason } });
  };

  const session = (req: IncomingMessage): boolean => {
    const c = cookieOf(req);
    if (!c) return false;
    const key = digest(c).toString('hex');
    const until = sessions.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    sessions.delete(key);
    return false;
  };
  const newSession = (): string => {
    const value = randomBytes(32).toString('base64url');
    // At most `sessions` browsers: the oldest is signed out first.
    while (sessions.size >= L.sessions) sessions.delete(sessions.keys().next().value as string);
    sessions.set(digest(value).toString('hex'), Date.now() + L.session_ttl_ms);
    return `${COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=${BASE}; Max-Age=${Math.floor(L.session_ttl_ms / 1000)}`;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method;
    const hostRefusal = checkHost(req.headers, { hosts, origins, tokenDigest: Buffer.alloc(0) }) ?? checkHeaders(req.headersDistinct, req.headers.host);
    if (hostRefusal) return refuse(res, hostRefusal.status, hostRefusal.reason, method);
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(normalOrigin(origin))) return refuse(res, 403, 'origin not allowed', method);
    if (method === 'POST' && origin === undefined) return refuse(res, 403, 'a state-changing request must carry the page origin', method);
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const path = url.pathname;
    if (path !== BASE && !path.startsWith(`${BASE}/`)) return refuse(res, 404, 'not found', method);
    // Relative addresses in the page (app.js, api/…) need the trailing slash.
    if (path === BASE) return send(res, 308, 'text/plain; charset=utf-8', '', { location: `${BASE}/${url.search}` });
    const rest = path.slice(BASE.length + 1);

    if (method === 'GET' && (rest === 'app.js' || rest === 'style.css' || rest === 'icon.svg')) return send(res, 200, ASSETS[rest] as string, assets.get(rest) as Buffer);
    if (method === 'GET' && rest === '' && url.searchParams.has('code')) {
      if (!spendCode(o.profileDir, url.searchParams.get('code') as string)) return refuse(res, 401, 'this code is unknown, expired or already used; mint a new one with shadowcode console --code', method);
      return send(res, 303, 'text/plain; charset=utf-8', '', { location: `${BASE}/`, 'set-cookie': newSession() });
    }
    if (!session(req)) return refuse(res, 401, 'not signed in: open the address shadowcode console printed, or mint one with shadowcode console --code', method);
    if (method === 'GET' && rest === '') return send(res, 200, ASSETS['index.html'] as string, assets.get('index.html') as Buffer);
    if (!rest.startsWith('api/')) return refuse(res, 404, 'not found', method);
    const route = rest.slice(4);

    if (method === 'GET' && route === 'events') {
      if (feed.size >= L.sse_streams) return refuse(res, 429, 'too many open feeds', method);
      const ctx = o.api.profile;
      await enforce(ctx.gate, ctx.request('cli:console.watch'), () => undefined);
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream', connection: 'close' });
      return feed.add(res);
    }
    try {
      if (method === 'GET') return json(res, 200, await get(o.api, route, url.searchParams));
      if (method !== 'POST') return refuse(res, 405, 'method not allowed', method);
      if (!/^application\/json(;|$)/.test(req.headers['content-type'] ?? '')) return refuse(res, 400, 'send a JSON body (content-type application/json)', method);
      const body = await readBody(req, L.body_bytes, L.body_deadline_ms);
      if (body === 'timeout') return void res.destroy();
      if (!Buffer.isBuffer(body)) return refuse(res, body.status, body.reason, method);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        throw new ScError('SC_BAD_VALUE', 'the body is not JSON');
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ScError('SC_BAD_VALUE', 'the body must be a JSON object');
      return json(res, 200, await post(o.api, route, parsed as Record<string, unknown>));
    } catch (err) {
      const e = asScError(err);
      return json(res, STATUS[e.code] ?? 400, e.toJSON());
    }
  };

  const server = createServer({ keepAliveTimeout: 1, maxHeaderSize: L.header_bytes }, (req, res) => {
    if (!front.claim(req)) return;
    if (!rate.hit()) return send(res, 429, 'text/plain', '', { 'retry-after': '1' });
    serve(req, res).catch((err) => {
      o.log(`shadowcode console: ${(err as Error).message}`);
      const e = asScError(err);
      json(res, STATUS[e.code] ?? 500, e.toJSON());
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  const front = acceptConnections(ticket, server, L);
  const { port } = await front.listen(o.port, '127.0.0.1').catch((err: NodeJS.ErrnoException) => {
    throw new ScError('SC_HTTP_LISTEN_FAILED', `cannot listen on 127.0.0.1:${o.port}: ${err.code ?? err.message}`);
  });
  hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  origins = new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`]);
  const base = `http://127.0.0.1:${port}${BASE}/`;
  const first = startRecord(o.profileDir, base, L.code_ttl_ms);
  return {
    url: first.url,
    base,
    port,
    close: async () => {
      feed.close();
      removeRecord(o.profileDir);
      await front.close(L.body_deadline_ms);
    },
  };
}
