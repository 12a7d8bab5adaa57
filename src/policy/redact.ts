/*
 * Masks secrets before anything is stored or shown, by key name.
 *
 *   value under a credential-looking key ─► replaced whole by [redacted]
 *     (except a number under a key that names a token count, such as
 *     `input_tokens` or `cache_read_input_tokens`: a count is never a secret, and
 *     a `*_tokens_details` object is walked so its counts show and anything else
 *     in it is still judged by its own key)
 *   any other string ─► scrub.ts replaces known secret values in it by [secret:NAME]
 *   ─► cut to audit.string_chars (policy/limits.json), so an audit row cannot grow without bound
 *
 * The two stay distinct: redact hides what a key says is a credential, even a
 * value never seen before; scrub hides values known to be secret, wherever they are.
 */
import { scrub, scrubber } from './scrub.js';

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

/** Known secret values replaced by [secret:NAME] (policy/scrub.ts). */
export function scrubText(text: string): string {
  return scrub(text);
}

/**
 * A scrub function that looks at the secret set when it is first used, and from then on
 * uses that same set: one check for everything redacted together (a decision's resource
 * and arguments), and none for a body without a string (a call without arguments).
 */
export function lazyScrubber(): (text: string) => string {
  let scrub: ((text: string) => string) | undefined;
  return (text) => (scrub ??= scrubber())(text);
}

/** `clean`: the scrubber to use, shared by values redacted together; a fresh lazyScrubber() if none. */
export function redact(value: unknown, maxChars: number, clean: (text: string) => string = lazyScrubber()): unknown {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') {
      const s = clean(v);
      return s.length > maxChars ? `${s.slice(0, maxChars)}…[${s.length - maxChars} more]` : s;
    }
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_DEPTH) return '[nested]';
    if (Array.isArray(v)) return v.slice(0, 64).map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, 64)) out[clean(k)] = masked(k, x) ? REDACTED : walk(x, depth + 1);
    return out;
  };
  return walk(value, 0);
}
