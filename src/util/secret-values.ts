/*
 * The secret values this process knows, each with the name it goes by, so
 * anything stored, shown or sent can be scrubbed of them (policy/scrub.ts
 * builds its matcher from here).
 *
 *   registerSecretValue(value, name) ─► a value handed out: a resolved env_refs
 *     value, a model key, the gateway token, a definition's literal env
 *   addSecretSource(id, source) ─► a whole store read on demand (the profile's
 *     secrets.json): every stored value, whether or not this process revealed it
 *   snapshot() ─► a key that changes whenever the set may have, and the entries
 *
 * Sources are keyed by id (the store's path), so opening the same store twice
 * does not register it twice.
 */
export interface SecretSource {
  /** Cheap, and different whenever entries() may differ (the file's size, mtime and inode). */
  token(): string;
  entries(): Iterable<readonly [name: string, value: string]>;
}

const known = new Map<string, string>();
const sources = new Map<string, SecretSource>();
let bumps = 0;

export function registerSecretValue(value: string, name = 'value'): void {
  if (!value || known.has(value)) return;
  known.set(value, name);
  bumps++;
}

export function addSecretSource(id: string, source: SecretSource): void {
  sources.set(id, source);
  bumps++;
}

/** A key naming this exact set (cheap to compute), and a way to read it. */
export function secretSnapshot(): { key: string; entries(): Array<readonly [string, string]> } {
  let key = String(bumps);
  for (const s of sources.values()) key += `|${s.token()}`;
  return {
    key,
    entries() {
      const out: Array<readonly [string, string]> = [];
      for (const s of sources.values()) for (const e of s.entries()) out.push(e);
      for (const [value, name] of known) out.push([name, value]);
      return out;
    },
  };
}
