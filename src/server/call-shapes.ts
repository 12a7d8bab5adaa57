/*
 * The shapes of a request the SDK hands our tools/call handler unchanged, and the shapes its
 * answer takes on the wire: what the calls answered past the SDK (stdio-calls.ts,
 * http-calls.ts) and the opening answered before it (stdio-first.ts) check and write.
 *
 *   plainCapabilities(c)   the client capabilities real clients send
 *   plainModernCall(m)     {jsonrpc, id, method: 'tools/call', params: {name, arguments?, _meta}}
 *                          with the 2026-07-28 envelope and nothing else
 *   inSchemaOrder(result)  a result's keys in the order the SDK's result schema writes them
 *   modernResult(result)   that, stamped as the 2026-07-28 revision requires: resultType
 *                          'complete' and the server's identity in _meta, where the SDK puts them
 *
 * Each is held to the SDK's own answers byte for byte by the tests of its users.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { isPlainObject as isPlain, isRequestId as isId } from '../transport/envelope.js';
import { SERVER_INFO } from './listing.js';
import { MODERN_REVISION } from '../version.js';

type Msg = Record<string, unknown>;

export const MODERN = MODERN_REVISION;
export const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/clientInfo';
const SERVER = 'io.modelcontextprotocol/serverInfo';

/** Whether every key of `v` is one of `keys`. */
export const only = (v: Msg, keys: readonly string[]) => Object.keys(v).every((k) => keys.includes(k));

/** Capabilities of the shapes real clients send: roots (listChanged), and empty sampling, elicitation, experimental. */
export function plainCapabilities(c: unknown): boolean {
  if (!isPlain(c)) return false;
  for (const [k, v] of Object.entries(c)) {
    if (!isPlain(v)) return false;
    if (k === 'roots') {
      if (!only(v, ['listChanged']) || (v.listChanged !== undefined && typeof v.listChanged !== 'boolean')) return false;
    } else if (k !== 'sampling' && k !== 'elicitation' && k !== 'experimental') return false;
    else if (Object.keys(v).length) return false;
  }
  return true;
}

function plainInfo(i: unknown): boolean {
  if (!isPlain(i) || !only(i, ['name', 'version']) || typeof i.name !== 'string' || typeof i.version !== 'string') return false;
  return i.name.length > 0 && i.name.length <= 256 && i.version.length <= 256;
}

export type PlainCall = Msg & { id: string | number; params: { name: string; arguments?: Record<string, unknown> } };

/** A 2026-07-28 tools/call whose every part the SDK accepts and passes on unchanged. */
export function plainModernCall(m: unknown): m is PlainCall {
  if (!isPlain(m) || m.jsonrpc !== '2.0' || m.method !== 'tools/call' || !isId(m.id) || !only(m, ['jsonrpc', 'id', 'method', 'params'])) return false;
  const p = m.params;
  if (!isPlain(p) || typeof p.name !== 'string' || !only(p, ['name', 'arguments', '_meta'])) return false;
  if (p.arguments !== undefined && !isPlain(p.arguments)) return false;
  const meta = p._meta;
  if (!isPlain(meta) || meta[PV] !== MODERN || !plainCapabilities(meta[CAPS]) || !only(meta, [PV, CAPS, INFO])) return false;
  return meta[INFO] === undefined || plainInfo(meta[INFO]);
}

/** The result with its keys in the order the SDK's result schema writes them, so the bytes are the SDK's. */
export function inSchemaOrder(result: CallToolResult): Msg {
  const { _meta, content, structuredContent, isError, ...rest } = result;
  return { ...(_meta !== undefined ? { _meta } : {}), content, ...(structuredContent !== undefined ? { structuredContent } : {}), ...(isError !== undefined ? { isError } : {}), ...rest };
}

/** The result as the SDK writes it in the 2026-07-28 revision: resultType stamped after its keys, the server's identity added to _meta. */
export function modernResult(result: CallToolResult): Msg {
  const r = inSchemaOrder(result);
  const stamped: Msg = r.resultType === undefined ? { ...r, resultType: 'complete' } : r;
  const meta = stamped._meta;
  if (meta === undefined) return { ...stamped, _meta: { [SERVER]: SERVER_INFO } };
  return isPlain(meta) && meta[SERVER] === undefined ? { ...stamped, _meta: { ...meta, [SERVER]: SERVER_INFO } } : stamped;
}
