/*
 * The environment of one stdio connection, built at connect time and never earlier.
 *
 *   policy/environment.json allow-list of our own env (childEnv: provider keys,
 *   control variables and loader overrides never pass)
 *   + the definition's literal env
 *   + env_refs, each resolved now: the secret store first, then our environment
 *
 * A definition may not set a loader override (LD_*, DYLD_*, or a name the policy
 * denies such as NODE_OPTIONS): that would hand the server's start-up to whoever
 * wrote the file. Every value that came from the definition or a reference is
 * registered as secret, so redaction scrubs it from results, stderr and events.
 */
import type { Environment } from '../../gen/types/environment.js';
import { childEnv } from '../engine/child-env.js';
import { ScError } from '../errors.js';
import { registerSecretValue } from '../policy/redact.js';

export interface SecretSource {
  reveal(name: string): string | undefined;
}

// Loader families the dynamic linkers read; any member is an override, listed or not.
const LOADER_PREFIXES = ['LD_', 'DYLD_'];

function refusedName(policy: Environment, name: string): boolean {
  return LOADER_PREFIXES.some((p) => name.startsWith(p)) || policy.deny.includes(name);
}

/** Resolves a credential reference: a stored secret, else our environment. Undefined when neither has it. */
export function resolveRef(name: string, secrets: SecretSource, env: NodeJS.ProcessEnv): string | undefined {
  const v = secrets.reveal(name) ?? env[name];
  if (v !== undefined) registerSecretValue(v, name);
  return v;
}

export function connectionEnv(
  policy: Environment,
  ownEnv: NodeJS.ProcessEnv,
  id: string,
  literal: Record<string, string>,
  refs: Record<string, string>,
  secrets: SecretSource,
): Record<string, string> {
  const out = childEnv(policy, ownEnv);
  for (const name of [...Object.keys(literal), ...Object.keys(refs)]) {
    if (refusedName(policy, name)) throw new ScError('SC_DEF_REFUSED', `${id} sets ${name}, a loader or control variable no external server may be given`);
  }
  for (const [name, value] of Object.entries(literal)) {
    registerSecretValue(value, name);
    out[name] = value;
  }
  for (const [name, ref] of Object.entries(refs)) {
    const value = resolveRef(ref, secrets, ownEnv);
    if (value === undefined) throw new ScError('SC_SECRET_NOT_FOUND', `${id}: env_refs ${name} names ${ref}, which is neither a stored secret nor set in the environment`);
    out[name] = value;
  }
  return out;
}

/**
 * Makes the credentials a definition would be given known to the scrubber now,
 * before the server starts: an approved command of the same task could print
 * one (from a file, say) before the first connection resolves it. Names that
 * resolve to nothing are skipped; the connection reports them when it starts.
 */
export function knowCredentials(refs: Record<string, string>, apiKeyEnv: string | undefined, secrets: SecretSource, env: NodeJS.ProcessEnv): void {
  for (const ref of [...Object.values(refs), ...(apiKeyEnv ? [apiKeyEnv] : [])]) {
    try {
      resolveRef(ref, secrets, env);
    } catch {
      /* an unreadable store: the connection fails loudly when it starts */
    }
  }
}
