/*
 * Masks secrets before anything is stored or shown, by key name.
 *
 *   value under a credential-looking key ─► replaced whole by [redacted]
 *   any other string ─► scrub.ts replaces known secret values in it by [secret:NAME]
 *   ─► cut to audit.string_chars (policy/limits.json), so an audit row cannot grow without bound
 *
 * The two stay distinct: redact hides what a key says is a credential, even a
 * value never seen before; scrub hides values known to be secret, wherever they are.
 */
import { scrub, scrubber } from './scrub.js';

const SENSITIVE_KEY = /(token|secret|password|passwd|passphrase|api[_-]?key|authorization|cookie|credential)/i;
const MAX_DEPTH = 8;
export const REDACTED = '[redacted]';

export { registerSecretValue } from '../util/secret-values.js';

/** Known secret values replaced by [secret:NAME] (policy/scrub.ts). */
export function scrubText(text: string): string {
  return scrub(text);
}

export function redact(value: unknown, maxChars: number): unknown {
  const clean = scrubber();
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') {
      const s = clean(v);
      return s.length > maxChars ? `${s.slice(0, maxChars)}…[${s.length - maxChars} more]` : s;
    }
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_DEPTH) return '[nested]';
    if (Array.isArray(v)) return v.slice(0, 64).map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, 64)) {
      out[clean(k)] = SENSITIVE_KEY.test(k) && x !== null && x !== undefined && x !== '' ? REDACTED : walk(x, depth + 1);
    }
    return out;
  };
  return walk(value, 0);
}
