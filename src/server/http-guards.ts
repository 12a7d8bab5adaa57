/*
 * The HTTP gateway's checks on a request, before any MCP handler sees it. Each
 * returns null (pass) or a refusal with the status to send. Pure functions over
 * the request line and headers, so each refusal is tested on its own.
 *
 *   Host (403) ─► Origin (403) ─► query (400) ─► path (404) ─► bearer token (401)
 *   ─► method (405) ─► duplicated or forwarded headers (400); after the body: a batch (400)
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface Refusal {
  readonly status: 400 | 401 | 403 | 404 | 405 | 413 | 429;
  readonly reason: string;
  /** A JSON-RPC error to send as the body, where the caller can act on it. */
  readonly body?: string;
}

export interface GuardConfig {
  /** Host values accepted, lower-case, with the port: `127.0.0.1:8765`, `localhost:8765`, or proxy hosts. */
  readonly hosts: ReadonlySet<string>;
  /** Exact Origin values accepted, normalised (normalOrigin): the gateway's own origin, or its proxy hosts' https ones. */
  readonly origins: ReadonlySet<string>;
  readonly tokenDigest: Buffer;
}

/** RFC 6750 b64token: the characters a bearer credential may contain. */
export const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** One-shot: no Hash object per request (the bearer check runs on every request). */
export function digest(token: string): Buffer {
  return hash('sha256', token, 'buffer') as unknown as Buffer;
}

/** Headers that carry MCP routing or credentials; each may appear at most once. */
const SINGLE = ['authorization', 'host', 'origin', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'last-event-id', 'content-type', 'content-length'];

export function checkHost(headers: IncomingHttpHeaders, cfg: GuardConfig): Refusal | null {
  const host = headers.host?.toLowerCase();
  return host && cfg.hosts.has(host) ? null : { status: 403, reason: 'host not allowed' };
}

/** Lower-cased, with the scheme's default port dropped: `https://host:443` is `https://host`, `http://h:80` is `http://h`. */
export function normalOrigin(origin: string): string {
  const o = origin.toLowerCase();
  const m = /^(https?):\/\/(\[[0-9a-f:.]+\]|[^/:[\]]+)(?::(\d+))?$/.exec(o);
  if (!m) return o;
  const dflt = m[1] === 'https' ? '443' : '80';
  return m[3] === undefined || m[3] === dflt ? `${m[1]}://${m[2]}` : `${m[1]}://${m[2]}:${Number(m[3])}`;
}

export function checkOrigin(headers: IncomingHttpHeaders, cfg: GuardConfig): Refusal | null {
  const origin = headers.origin;
  if (origin === undefined) return null;
  return cfg.origins.has(normalOrigin(origin)) ? null : { status: 403, reason: 'origin not allowed' };
}

/**
 * One JSON-RPC message per request: no revision served on HTTP accepts a batch, and
 * the SDK's legacy leg would run every message in one. Refused before anything runs.
 */
export function checkBody(body: Buffer): Refusal | null {
  let i = 0;
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x09 || body[i] === 0x0a || body[i] === 0x0d)) i++;
  if (body[i] !== 0x5b) return null;
  const error = { code: -32600, message: 'Invalid Request: JSON-RPC batches are not accepted; send one message per HTTP request' };
  return { status: 400, reason: 'batch', body: JSON.stringify({ jsonrpc: '2.0', id: null, error }) };
}

export function checkTarget(url: string): Refusal | null {
  if (url.includes('?')) return { status: 400, reason: 'query strings are not accepted' };
  return url === '/mcp' ? null : { status: 404, reason: 'not found' };
}

/** Constant-time: both sides are hashed to equal length before comparing. */
export function checkBearer(headers: IncomingHttpHeaders, cfg: GuardConfig): Refusal | null {
  const auth = headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer ([^\s]+)$/.exec(auth) : null;
  const ok = m !== null && timingSafeEqual(digest(m[1] as string), cfg.tokenDigest);
  return ok ? null : { status: 401, reason: 'unauthorized' };
}

export function checkMethod(method: string | undefined): Refusal | null {
  if (method === 'POST') return null;
  return method === 'GET' || method === 'DELETE' ? { status: 405, reason: 'method not allowed' } : { status: 404, reason: 'not found' };
}

export function checkHeaders(distinct: Record<string, string[] | undefined>, hostHeader: string | undefined): Refusal | null {
  for (const [name, values] of Object.entries(distinct)) {
    if (!values || values.length < 2) continue;
    if (SINGLE.includes(name) || name.startsWith('mcp-')) return { status: 400, reason: `duplicated ${name} header` };
  }
  // We never take the host from a forwarded header; one that disagrees with Host is an attempt to make us.
  const fwdHost = distinct['x-forwarded-host']?.[0];
  if (fwdHost !== undefined && fwdHost.toLowerCase() !== hostHeader?.toLowerCase()) return { status: 400, reason: 'x-forwarded-host disagrees with host' };
  const forwarded = distinct.forwarded?.[0];
  const fHost = forwarded ? /(?:^|[;,\s])host="?([^";,\s]+)"?/i.exec(forwarded)?.[1] : undefined;
  if (fHost !== undefined && fHost.toLowerCase() !== hostHeader?.toLowerCase()) return { status: 400, reason: 'forwarded host disagrees with host' };
  return null;
}

/** Headers handed to the MCP handler: everything except credentials and forwarding hints. */
export function forwardableHeaders(distinct: Record<string, string[] | undefined>): Headers {
  const h = new Headers();
  for (const [name, values] of Object.entries(distinct)) {
    if (!values || name === 'authorization' || name === 'cookie' || name === 'proxy-authorization' || name.startsWith('x-forwarded-') || name === 'forwarded') continue;
    for (const v of values) h.append(name, v);
  }
  return h;
}
