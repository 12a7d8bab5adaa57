/*
 * Turning a tool's data or error into an MCP result. A result larger than the
 * cap becomes a tool error, never a truncated JSON document.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { asScError, ScError } from '../errors.js';
import { shippedPolicy } from '../policy/load.js';
import { redact, scrubText } from '../policy/redact.js';

/** maxChars: how much of each string the structured error keeps (audit.string_chars of the policy in force). */
export function errorResult(err: unknown, maxChars: number = shippedPolicy().limits.audit.string_chars): CallToolResult {
  const e = asScError(err);
  const body = e.toJSON();
  return { isError: true, content: [{ type: 'text', text: scrubText(`${e.code}: ${e.message}`) }], structuredContent: redact(body, maxChars) as Record<string, unknown> };
}

export function dataResult(data: unknown, maxBytes: number, maxChars: number = shippedPolicy().limits.audit.string_chars): CallToolResult {
  const structured = (data !== null && typeof data === 'object' && !Array.isArray(data) ? data : { value: data }) as Record<string, unknown>;
  // Scrubbing the serialised form covers every nested string in one pass; parse back only when it changed something.
  const raw = JSON.stringify(structured);
  const text = scrubText(raw);
  const result: CallToolResult = { content: [{ type: 'text', text }], structuredContent: text === raw ? structured : (JSON.parse(text) as Record<string, unknown>) };
  // On the wire the text travels once as a JSON string (escaped) and once as structured content.
  const size = Buffer.byteLength(JSON.stringify(text)) + Buffer.byteLength(text) + 64;
  if (size > maxBytes) {
    return errorResult(new ScError('SC_RESULT_TOO_LARGE', `the result is ${size} bytes, over the ${maxBytes}-byte cap; ask for less (a smaller page, fewer rows)`, { bytes: size, cap: maxBytes }), maxChars);
  }
  return result;
}
