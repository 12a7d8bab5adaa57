/*
 * The provider factory: a settings entry ─► a ModelProvider.
 *
 *   entry ─► endpointOf (checked URL, loopback or remote)
 *         ─► key: api_key_env from deps.env | api_key_secret from the secret store
 *         ─► refuse a key over plain http off loopback ─► register the key with the redactor
 *         ─► OpenAiCompatibleProvider (openai-compatible, ollama) | AnthropicProvider
 *
 * The key is resolved here only, at task start, and never logged; the network
 * permission is the gate's business (rule remote-model-needs-network), decided
 * per request on action model:request.
 */
import { ScError } from '../../errors.js';
import { type Endpoint, endpointOf, type SettingsModel } from '../../engine/models.js';
import type { Policy } from '../../policy/load.js';
import { registerSecretValue } from '../../policy/redact.js';
import type { SecretStore } from '../../store/secrets.js';
import type { ModelProvider } from '../types.js';
import { AnthropicProvider } from './anthropic.js';
import type { ProviderConfig } from './config.js';
import { OpenAiCompatibleProvider } from './openai.js';

export type { SettingsModel };

export interface ProviderDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretStore;
  readonly policy: Policy;
}

function resolveKey(entry: SettingsModel, deps: Pick<ProviderDeps, 'env' | 'secrets'>): string | null {
  if (entry.api_key_env) {
    // The environment first, then a stored secret of the same name (as shadow_models reports presence).
    const v = deps.env[entry.api_key_env] || deps.secrets.reveal(entry.api_key_env);
    if (v === undefined || v === '') throw new ScError('SC_MODEL_CREDENTIAL_MISSING', `model ${entry.id}: environment variable ${entry.api_key_env} is not set`, { name: entry.api_key_env });
    registerSecretValue(v, entry.api_key_env);
    return v;
  }
  if (entry.api_key_secret) {
    const v = deps.secrets.reveal(entry.api_key_secret);
    if (v === undefined) throw new ScError('SC_MODEL_CREDENTIAL_MISSING', `model ${entry.id}: secret ${entry.api_key_secret} is not stored`, { name: entry.api_key_secret });
    return v;
  }
  return null;
}

/** A key may travel only over https, or to loopback. */
export function checkKeyTransport(id: string, ep: Endpoint, hasKey: boolean): void {
  if (hasKey && !ep.loopback && ep.url.protocol !== 'https:') {
    throw new ScError('SC_MODEL_KEY_INSECURE', `model ${id}: a key is only sent over https to a host that is not loopback (${ep.host})`);
  }
}

/** The endpoint and the key of an entry, checked; what a turn or a probe needs before it connects. */
export function resolveModel(entry: SettingsModel, deps: Pick<ProviderDeps, 'env' | 'secrets'>): { ep: Endpoint; key: string | null } {
  const ep = endpointOf(entry);
  const key = resolveKey(entry, deps);
  checkKeyTransport(entry.id, ep, key !== null);
  return { ep, key };
}

export function createProvider(entry: SettingsModel, deps: ProviderDeps): ModelProvider {
  // INVARIANT: coding-CLI entries go to createRunner (src/agent/runners), never here.
  if (entry.provider === 'claude-code' || entry.provider === 'codex' || entry.provider === 'acp') throw new ScError('SC_INTERNAL', `${entry.provider} is a CLI runner, not a model provider`);
  const { ep, key } = resolveModel(entry, deps);
  const m = deps.policy.limits.models;
  const cfg: ProviderConfig = {
    id: entry.id,
    kind: entry.provider,
    model: entry.model,
    url: ep.url,
    loopback: ep.loopback,
    key,
    contextTokens: entry.context_tokens ?? m.default_context_tokens,
    limits: m,
  };
  return entry.provider === 'anthropic' ? new AnthropicProvider(cfg) : new OpenAiCompatibleProvider(cfg);
}

/** The resource of the gate request on action model:request for one turn of this provider. */
export function modelResource(p: ModelProvider): { model: string; endpoint_kind: 'loopback' | 'remote'; host: string } {
  const host = new URL(p.endpoint.url).hostname;
  return { model: p.id, endpoint_kind: p.endpoint.loopback ? 'loopback' : 'remote', host: (host.startsWith('[') ? host.slice(1, -1) : host).slice(0, 256) };
}
