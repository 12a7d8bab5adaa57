/*
 * Checks on a JSON-RPC message that run before anything else reads it, so a
 * request the SDK would drop without a word gets an answer instead.
 *
 *   raw bytes ─► nesting depth (a linear scan, no recursion, no parse) ─► too
 *   deep: the top-level "id" and "method" are found by a second linear scan; a
 *   request is answered with an error for its id, anything else is dropped
 *   parsed object ─► envelope: jsonrpc "2.0"; a request has a string or number
 *   id, a string method, object params and nothing else ─► problem: an Invalid
 *   Request error for that id (null when the id itself is unusable)
 *
 * Notifications and responses with a bad envelope are dropped: JSON-RPC never
 * answers them.
 */

export type RpcId = string | number;

/** JSON-RPC's Invalid Request code. */
export const INVALID_REQUEST = -32600;

/** Whether arrays and objects in `buf` nest deeper than `max`; strings are skipped, so brackets inside them do not count. */
export function nestsDeeperThan(buf: Uint8Array, max: number): boolean {
  if (buf.length <= max) return false; // every level needs at least one byte
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i] as number;
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

export interface TopLevel {
  /** Whether the object has an "id" member, and its value when that is a string or a number. */
  readonly hasId: boolean;
  readonly id: RpcId | undefined;
  readonly hasMethod: boolean;
}

/** The top-level "id" and "method" members, found by a linear scan without parsing the rest. */
export function topLevel(text: string): TopLevel {
  let depth = 0;
  let i = 0;
  let hasId = false;
  let id: RpcId | undefined;
  let hasMethod = false;
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  const readString = (): string | undefined => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      return undefined;
    }
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const s = readString();
      if (depth !== 1) continue;
      skipSpace();
      if (text[i] !== ':') continue;
      i++;
      if (s === 'method') hasMethod = true;
      if (s !== 'id') continue;
      hasId = true;
      skipSpace();
      if (text[i] === '"') id = readString();
      else {
        const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 32));
        id = m ? Number(m[0]) : undefined;
      }
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    i++;
  }
  return { hasId, id, hasMethod };
}

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

function isId(v: unknown): v is RpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** An id the SDK accepts on a request: a string or an integer it can echo exactly (its schema is string | int). */
export function isRequestId(v: unknown): v is RpcId {
  return typeof v === 'string' || Number.isSafeInteger(v);
}

/** A plain JSON object as JSON.parse makes it (not an array, null or anything with another prototype). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;
}

export interface EnvelopeProblem {
  /** The id to answer with: the request's own, or null when it has none usable. Undefined: do not answer. */
  readonly answer: RpcId | null | undefined;
  readonly reason: string;
}

/** Null for a well-formed message; otherwise what is wrong and whether to answer. */
export function envelopeProblem(msg: Record<string, unknown>): EnvelopeProblem | null {
  const hasMethod = 'method' in msg;
  const isResponse = !hasMethod && ('result' in msg || 'error' in msg);
  if (isResponse) return msg.jsonrpc === '2.0' && isId(msg.id) ? null : { answer: undefined, reason: 'a malformed response' };
  const hasId = 'id' in msg;
  if (hasMethod && !hasId) {
    // A notification: never answered, but still only passed on when well-formed.
    const ok = msg.jsonrpc === '2.0' && typeof msg.method === 'string' && (msg.params === undefined || (typeof msg.params === 'object' && msg.params !== null && !Array.isArray(msg.params)));
    return ok ? null : { answer: undefined, reason: 'a malformed notification' };
  }
  const answer = isId(msg.id) ? msg.id : null;
  if (!hasMethod) return { answer, reason: 'Invalid Request: a request needs a method' };
  if (msg.jsonrpc !== '2.0') return { answer, reason: 'Invalid Request: jsonrpc must be "2.0"' };
  // A fractional or unsafe number would reach no handler (the SDK drops it unanswered) or come back changed.
  if (!isRequestId(msg.id)) return { answer, reason: 'Invalid Request: id must be a string or an integer' };
  if (typeof msg.method !== 'string') return { answer, reason: 'Invalid Request: method must be a string' };
  if (msg.params !== undefined && (typeof msg.params !== 'object' || msg.params === null || Array.isArray(msg.params))) return { answer, reason: 'Invalid Request: params must be an object' };
  const extra = Object.keys(msg).filter((k) => !REQUEST_KEYS.has(k));
  if (extra.length) return { answer, reason: `Invalid Request: unknown member ${extra.map((k) => JSON.stringify(k.slice(0, 64))).slice(0, 4).join(', ')}` };
  return null;
}

/** The error reply for a refused request. */
export function invalidRequest(id: RpcId | null, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code: INVALID_REQUEST, message } };
}
