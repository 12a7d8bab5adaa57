/*
 * Tool discovery under the catalog limits: one page at a time, so every limit is
 * ours and is checked before the next request.
 *
 *   tools/list (no cursor) ─► page: count, bytes, names unique ─► nextCursor:
 *   ≤ cursor_bytes, never seen before, page count < pages ─► tools/list {cursor} …
 *
 * All pages share one deadline (the definition's timeout). Any violation fails
 * the whole discovery, and with it the connection: a partial catalog is never
 * offered or pinned.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { Limits } from '../../gen/types/limits.js';
import { ScError } from '../errors.js';

export type CatalogLimits = Limits['catalog'];

export async function discoverTools(client: Client, limits: CatalogLimits, timeoutMs: number, signal: AbortSignal): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + timeoutMs;
  const tools: Record<string, unknown>[] = [];
  const names = new Set<string>();
  const cursors = new Set<string>();
  let bytes = 0;
  let cursor: string | undefined;
  for (let page = 1; ; page++) {
    const left = deadline - Date.now();
    if (left <= 0) throw new ScError('SC_TIMEOUT', `tool discovery did not finish within ${timeoutMs} ms`);
    const res = (await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, { timeout: left, maxTotalTimeout: left, signal })) as { tools?: unknown; nextCursor?: unknown };
    const list = Array.isArray(res.tools) ? (res.tools as Record<string, unknown>[]) : [];
    for (const t of list) {
      const name = typeof t?.name === 'string' ? t.name : '';
      if (names.has(name)) throw new ScError('SC_MCP_CATALOG_INVALID', `the server lists the tool ${JSON.stringify(name.slice(0, 128))} twice`);
      names.add(name);
      tools.push(t);
      if (tools.length > limits.tools) throw new ScError('SC_MCP_CATALOG_INVALID', `the server lists more than ${limits.tools} tools`);
    }
    bytes += Buffer.byteLength(JSON.stringify(list));
    if (bytes > limits.bytes) throw new ScError('SC_MCP_CATALOG_INVALID', `the tool catalog is larger than ${limits.bytes} bytes`);
    const next = res.nextCursor;
    if (next === undefined || next === null || next === '') return tools;
    if (typeof next !== 'string') throw new ScError('SC_MCP_CATALOG_INVALID', 'the server sent a cursor that is not a string');
    if (Buffer.byteLength(next) > limits.cursor_bytes) throw new ScError('SC_MCP_CATALOG_INVALID', `the server sent a cursor longer than ${limits.cursor_bytes} bytes`);
    if (cursors.has(next)) throw new ScError('SC_MCP_CATALOG_INVALID', 'the server repeated a cursor (a pagination loop)');
    if (page >= limits.pages) throw new ScError('SC_MCP_CATALOG_INVALID', `the tool catalog has more than ${limits.pages} pages`);
    cursors.add(next);
    cursor = next;
  }
}
