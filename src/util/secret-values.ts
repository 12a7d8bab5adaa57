/*
 * The values this process knows to be secret, so anything shown or stored can
 * be scrubbed of them. The secret store adds a value whenever it hands one out;
 * policy/redact.ts reads the set.
 */
const known = new Set<string>();

/** Values shorter than this are not scrubbed from free text: they would mask ordinary words. */
export const MIN_SCRUB = 6;

export function registerSecretValue(value: string): void {
  if (value.length >= MIN_SCRUB) known.add(value);
}

export function knownSecretValues(): ReadonlySet<string> {
  return known;
}
