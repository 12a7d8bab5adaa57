/*
 * The environment a job's process gets: only what policy/environment.json allows
 * of shadowcode's own environment. Deny wins over allow, so a credential-looking
 * name is dropped even under an allowed prefix.
 */
import type { Environment } from '../../gen/types/environment.js';

export function childEnv(policy: Environment, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value.startsWith('() {')) continue;
    const allowed = policy.allow.includes(name) || policy.allow_prefixes.some((p) => name.startsWith(p));
    const denied = policy.deny.includes(name) || policy.deny_substrings.some((s) => name.toUpperCase().includes(s));
    if (allowed && !denied) out[name] = value;
  }
  return out;
}
