/*
 * A plain 2026-07-28 tools/call over HTTP, answered without the SDK's request handler once
 * the gate has decided it (http.ts): the same callTool, its result encoded as the SDK
 * encodes it.
 *
 *   request, decided with its tool call (admit) ─► plainHttpCall(body, headers)?
 *     yes ─► callTool(conn, name, arguments, signal, admitted) ─► 200, application/json,
 *            {result: {…the result in the schema's key order, resultType: 'complete',
 *                      _meta: {…, serverInfo}}, jsonrpc, id}
 *     no  ─► the SDK's handler, as before
 *
 * Why: for a sequential request the SDK's handler (a Web Request built from the Node one,
 * its classification and header cross-checks, a per-request server, zod over the request
 * and the result, a Web Response read back) was the largest part of what the gateway adds
 * beyond the audited decisions (docs/performance.md). Only a request whose every part is
 * one the SDK accepts unchanged is taken: the body exactly `{jsonrpc, id, method:
 * 'tools/call', params: {name, arguments?, _meta}}` with the 2026-07-28 envelope (the
 * revision, capabilities of the plain shapes, and optionally the client's name and
 * version), the three standard headers naming the same revision, method and tool (a
 * plain name, no encoding), JSON and SSE both accepted, and nothing else of MCP's among
 * the headers; telemetry off. test/server/http-calls.test.ts compares each answer, status,
 * content type and body, with the SDK's.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { MODERN, modernResult, type PlainCall, plainModernCall } from './call-shapes.js';

// A tool name the Mcp-Name header carries as it is (no Base64 sentinel, nothing to trim).
const PLAIN_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

function plainAccept(values: readonly string[] | undefined): boolean {
  if (values?.length !== 1) return false;
  const types = (values[0] as string).split(',').map((x) => x.trim());
  return types.length === 2 && types.includes('application/json') && types.includes('text/event-stream');
}

/** The body and headers of a tools/call the SDK's handler would pass to ours unchanged, in the 2026-07-28 revision. */
export function plainHttpCall(m: unknown, headers: Record<string, string[] | undefined>): m is PlainCall {
  if (!plainModernCall(m) || !PLAIN_NAME.test(m.params.name)) return false;
  for (const name of Object.keys(headers)) {
    if (name.startsWith('mcp-') && name !== 'mcp-protocol-version' && name !== 'mcp-method' && name !== 'mcp-name') return false;
  }
  const one = (name: string) => (headers[name]?.length === 1 ? headers[name][0] : undefined);
  if (one('mcp-protocol-version') !== MODERN || one('mcp-method') !== 'tools/call' || one('mcp-name') !== m.params.name) return false;
  if (one('content-type') !== 'application/json' || !plainAccept(headers.accept)) return false;
  return headers['last-event-id'] === undefined;
}

/** The response body the SDK writes for `result`: the result stamped as the 2026-07-28 revision requires, then jsonrpc and id. */
export function modernAnswer(result: CallToolResult, id: string | number): string {
  return JSON.stringify({ result: modernResult(result), jsonrpc: '2.0', id });
}
