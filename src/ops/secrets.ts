/*
 * The profile's secret store as operations: names and dates out, values only in.
 *
 *   listSecrets(ops)             ─► names and dates, and the definitions whose literal env values
 *                                   mcp add moved here (names only); never a value
 *   setSecret(ops, {name, value}) ─► the name checked ─► gate cli:secret.set ─► stored (0600) ─► {name, created}
 *   removeSecret(ops, name)       ─► the name checked ─► gate cli:secret.remove ─► gone
 *
 * The value comes from the caller (the CLI reads it from stdin or a hidden prompt, never argv)
 * and is never returned.
 */
import { enforce } from '../policy/gate.js';
import { checkSecretName, type SecretStore } from '../store/secrets.js';
import type { OpsContext } from './context.js';

export interface SecretList {
  readonly secrets: ReturnType<SecretStore['list']>;
  readonly definition_env: ReturnType<SecretStore['definitionEnvNames']>;
}

export function listSecrets(ops: Pick<OpsContext, 'secrets'>): SecretList {
  const store = ops.secrets();
  return { secrets: store.list(), definition_env: store.definitionEnvNames() };
}

export async function setSecret(ops: OpsContext, input: { readonly name: string; readonly value: string }): Promise<{ name: string; created: boolean }> {
  const { name, value } = input;
  checkSecretName(name);
  const store = ops.secrets();
  const { created } = await enforce(ops.gate, ops.request('cli:secret.set', { args: { name } }), (t) => store.set(t, name, value));
  return { name, created };
}

export async function removeSecret(ops: OpsContext, name: string): Promise<{ name: string; removed: true }> {
  checkSecretName(name);
  const store = ops.secrets();
  await enforce(ops.gate, ops.request('cli:secret.remove', { args: { name } }), (t) => store.remove(t, name));
  return { name, removed: true };
}
