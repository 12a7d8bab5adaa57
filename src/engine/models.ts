/*
 * Configured models, as a connection may see them: no credential values, and
 * base URLs without userinfo or query (where a key could hide). Whether each
 * referenced credential is present is reported by name only.
 */
import type { Settings } from '../../gen/types/settings.js';
import type { SecretStore } from '../store/secrets.js';

export interface ModelView {
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  readonly base_url: string | null;
  readonly api_key_env: string | null;
  readonly credential: 'present' | 'missing' | 'not_needed';
  readonly default: boolean;
}

export function safeUrl(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}

export function credentialPresent(name: string, env: NodeJS.ProcessEnv, secrets: SecretStore): boolean {
  return (env[name] !== undefined && env[name] !== '') || secrets.has(name);
}

export function listModels(settings: Settings, env: NodeJS.ProcessEnv, secrets: SecretStore): ModelView[] {
  return (settings.models ?? []).map((m) => ({
    id: m.id,
    provider: m.provider,
    model: m.model,
    base_url: safeUrl(m.base_url),
    api_key_env: m.api_key_env ?? null,
    credential: m.api_key_env ? (credentialPresent(m.api_key_env, env, secrets) ? 'present' : 'missing') : 'not_needed',
    default: settings.default_model === m.id,
  }));
}
