/*
 * TOML v1.0.0 basic strings and keys, for the Codex snippet. Every value is a
 * fully escaped basic string: `"` and `\` escaped, control characters as \uXXXX
 * or their short escapes; no TOML 1.1-only escapes.
 */
const SHORT: Record<string, string> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

export function tomlString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) as number;
    if (SHORT[ch]) out += SHORT[ch];
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0').toUpperCase()}`;
    else out += ch;
  }
  return `${out}"`;
}

export function tomlKey(k: string): string {
  return /^[A-Za-z0-9_-]+$/.test(k) ? k : tomlString(k);
}

export function tomlArray(items: readonly string[]): string {
  return `[${items.map(tomlString).join(', ')}]`;
}
