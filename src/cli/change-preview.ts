/*
 * What a pending write would change, as a diff a person can judge at a y/N
 * prompt: the same exact input the approval row records (and an MCP host
 * reads through shadow_jobs), shown as the change it makes to the file.
 *
 *   write approval {path, tool, input} ─► Edit: old_string ─► new_string
 *     MultiEdit: each edit in turn · Write: the file now ─► content
 *     anything else: its exact input as JSON
 *   ─► a unified diff, cut at `max` characters with what was left out said
 */
import { unifiedDiff } from '../engine/diff.js';
import { tryReadProjectFile } from '../util/safe-read.js';

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… ${text.length - max} more characters of the change not shown\n`;
}

export function changePreview(project: string, action: Record<string, unknown>, max: number): string {
  const input = (action.input ?? {}) as Record<string, unknown>;
  const path = typeof action.path === 'string' ? action.path : null;
  const a = path ? `a/${path}` : 'a';
  const b = path ? `b/${path}` : 'b';
  if (typeof input.old_string === 'string' && typeof input.new_string === 'string') return cut(unifiedDiff(input.old_string, input.new_string, a, b), max);
  if (Array.isArray(input.edits)) {
    const parts = (input.edits as Array<Record<string, unknown>>).map((e) => unifiedDiff(String(e?.old_string ?? ''), String(e?.new_string ?? ''), a, b));
    return cut(parts.join(''), max);
  }
  if (typeof input.content === 'string' && path) {
    const now = tryReadProjectFile(project, path, { cap: max * 4, kind: 'file', overflow: 'truncate' });
    return cut(unifiedDiff(now ? now.bytes.toString('utf8') : '', input.content, now ? a : '/dev/null', b), max);
  }
  return cut(`${JSON.stringify(action.input ?? action, null, 2)}\n`, max);
}
