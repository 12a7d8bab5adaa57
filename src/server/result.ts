/*
 * Turning a tool's data or error into an MCP result. A result larger than the
 * cap becomes a tool error, never a truncated JSON document.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { asScError, ScError } from '../errors.js';
import { shippedPolicy } from '../policy/load.js';
import { redact, scrubText } from '../policy/redact.js';
import { scrubDeep } from '../policy/scrub.js';

/** maxChars: how much of each string the structured error keeps (audit.string_chars of the policy in force). */
export function errorResult(err: unknown, maxChars: number = shippedPolicy().limits.audit.string_chars): CallToolResult {
  const e = asScError(err);
  const body = e.toJSON();
  // A refusal names its decision in the text too: that is what a person reading the client's transcript sees.
  const decision = body.error.decision_id ? ` (decision ${body.error.decision_id}: shadowcode policy explain --decision ${body.error.decision_id})` : '';
  return { content: [{ type: 'text', text: scrubText(`${e.code}: ${e.message}${decision}`) }], structuredContent: redact(body, maxChars) as Record<string, unknown>, isError: true };
}

export function dataResult(data: unknown, maxBytes: number, maxChars: number = shippedPolicy().limits.audit.string_chars): CallToolResult {
  const structured = (data !== null && typeof data === 'object' && !Array.isArray(data) ? data : { value: data }) as Record<string, unknown>;
  // Scrubbed as values, not as serialised text: a secret holding a quote or a backslash is escaped in JSON and would slip past a text match.
  const clean = scrubDeep(structured);
  const text = JSON.stringify(clean);
  const result: CallToolResult = { content: [{ type: 'text', text }], structuredContent: clean };
  // On the wire the text travels once as a JSON string (escaped) and once as structured content.
  // A UTF-16 unit is at most 3 bytes of UTF-8, and at most 6 once escaped (\u001f): a text whose bound
  // is under the cap (nearly every answer) needs no exact count.
  if (9 * text.length + 66 <= maxBytes) return result;
  const size = Buffer.byteLength(JSON.stringify(text)) + Buffer.byteLength(text) + 64;
  if (size > maxBytes) {
    return errorResult(new ScError('SC_RESULT_TOO_LARGE', `the result is ${size} bytes, over the ${maxBytes}-byte cap; ask for less (a smaller page, fewer rows)`, { bytes: size, cap: maxBytes }), maxChars);
  }
  return result;
}
