/*
 * Masks secrets before anything is stored or shown.
 *
 * Two passes in one walk: a value under a credential-looking key is replaced
 * whole (except a number under a key that names a token count, such as
 * `input_tokens` or `cache_read_input_tokens`: a count is never a secret, and
 * a `*_tokens_details` object is walked so its counts show and anything else
 * in it is still judged by its own key), and any string containing a known secret value (registered by the
 * secret store when it hands a value out) has that value replaced. Strings are
 * truncated to audit.string_chars (policy/limits.json) so an audit row cannot
 * grow without bound.
 */
import { knownSecretValues } from '../util/secret-values.js';

const SENSITIVE_KEY = /(token|secret|password|passwd|passphrase|api[_-]?key|authorization|cookie|credential)/i;
/** Keys of usage counts: `input_tokens`, `total_tokens`, `cache_creation_input_tokens`, `inputTokens`. */
const COUNT_KEY = /tokens$/i;
const COUNT_DETAILS_KEY = /tokens_?details$/i;
const MAX_DEPTH = 8;

/** Whether the value under key k is masked whole. */
function masked(k: string, v: unknown): boolean {
  if (v === null || v === undefined || v === '' || !SENSITIVE_KEY.test(k)) return false;
  if (typeof v === 'number' && COUNT_KEY.test(k)) return false;
  if (typeof v === 'object' && !Array.isArray(v) && COUNT_DETAILS_KEY.test(k)) return false;
  return true;
}
export const REDACTED = '[redacted]';

export { registerSecretValue } from '../util/secret-values.js';

export function scrubText(text: string): string {
  let out = text;
  for (const v of knownSecretValues()) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

export function redact(value: unknown, maxChars: number, depth = 0): unknown {
  if (typeof value === 'string') {
    const s = scrubText(value);
    return s.length > maxChars ? `${s.slice(0, maxChars)}…[${s.length - maxChars} more]` : s;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[nested]';
  if (Array.isArray(value)) return value.slice(0, 64).map((v) => redact(v, maxChars, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>).slice(0, 64)) {
    out[k] = masked(k, v) ? REDACTED : redact(v, maxChars, depth + 1);
  }
  return out;
}
