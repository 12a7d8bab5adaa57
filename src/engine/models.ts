/*
 * Configured models, as a connection may see them: no credential values, and
 * base URLs without userinfo or query (where a key could hide). Whether each
 * referenced credential is present is reported by name only.
 *
 * Also the one place that decides what a model base URL may be and where it
 * points: checkBaseUrl (plain http/https, no userinfo, query or fragment) and
 * endpointOf (loopback or remote, by string rules only: `localhost` is loopback
 * by definition, never by what DNS says).
 */
import type { Settings } from '../../gen/types/settings.js';
import { ScError } from '../errors.js';
import { isLoopbackHost } from '../policy/net.js';
import type { SecretStore } from '../store/secrets.js';

export type SettingsModel = NonNullable<Settings['models']>[number];

/** The providers that are coding CLIs (src/agent/runners), not HTTP endpoints. */
export type RunnerProviderName = 'claude-code' | 'codex' | 'acp';
export type NativeProviderName = Exclude<SettingsModel['provider'], RunnerProviderName>;

/** Where each provider listens when no base_url is configured. */
export const DEFAULT_BASE_URL: Record<NativeProviderName, string> = {
  'openai-compatible': 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
  ollama: 'http://127.0.0.1:11434/v1',
};

/** A base URL as typed by a user, refused unless it is plain http(s). The message never repeats the URL (it may hold a key). */
export function checkBaseUrl(text: string): URL {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new ScError('SC_MODEL_URL_INVALID', 'the model base URL is not a valid absolute URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ScError('SC_MODEL_URL_INVALID', `the model base URL scheme must be http or https, not ${u.protocol.slice(0, 16)}`);
  if (u.username || u.password || /^[a-z]+:\/\/[^/]*@/i.test(text)) throw new ScError('SC_MODEL_URL_INVALID', 'the model base URL must not contain credentials; use --api-key-env or --api-key-secret');
  if (u.search || text.includes('?')) throw new ScError('SC_MODEL_URL_INVALID', 'the model base URL must not contain a query');
  if (u.hash || text.includes('#')) throw new ScError('SC_MODEL_URL_INVALID', 'the model base URL must not contain a fragment');
  if (!u.hostname) throw new ScError('SC_MODEL_URL_INVALID', 'the model base URL has no host');
  return u;
}

export interface Endpoint {
  readonly url: URL;
  readonly loopback: boolean;
  readonly host: string;
}

export function endpointOf(m: Pick<SettingsModel, 'provider' | 'base_url'>): Endpoint {
  const fallback = (DEFAULT_BASE_URL as Record<string, string | undefined>)[m.provider];
  if (m.base_url === undefined && fallback === undefined) throw new ScError('SC_INTERNAL', `${m.provider} is a coding CLI runner, not an HTTP endpoint`);
  const url = checkBaseUrl(m.base_url ?? (fallback as string));
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { url, loopback: isLoopbackHost(url.hostname), host };
}

export interface ModelView {
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  readonly base_url: string | null;
  /** loopback works with network permission off; remote needs it. `invalid` for a base URL that would be refused; `cli` for a coding-CLI runner. */
  readonly endpoint: 'loopback' | 'remote' | 'invalid' | 'cli';
  readonly api_key_env: string | null;
  readonly api_key_secret: string | null;
  readonly credential: 'present' | 'missing' | 'not_needed';
  readonly context_tokens: number | null;
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

function isRunner(p: SettingsModel['provider']): p is RunnerProviderName {
  return !(p in DEFAULT_BASE_URL);
}

function endpointKind(m: SettingsModel): ModelView['endpoint'] {
  if (isRunner(m.provider)) return 'cli';
  try {
    return endpointOf(m).loopback ? 'loopback' : 'remote';
  } catch {
    return 'invalid';
  }
}

export function listModels(settings: Settings, env: NodeJS.ProcessEnv, secrets: SecretStore): ModelView[] {
  return (settings.models ?? []).map((m) => ({
    id: m.id,
    provider: m.provider,
    model: m.model,
    base_url: safeUrl(m.base_url ?? (isRunner(m.provider) ? undefined : DEFAULT_BASE_URL[m.provider])),
    endpoint: endpointKind(m),
    api_key_env: m.api_key_env ?? null,
    api_key_secret: m.api_key_secret ?? null,
    credential: m.api_key_env
      ? credentialPresent(m.api_key_env, env, secrets) ? 'present' : 'missing'
      : m.api_key_secret
        ? secrets.has(m.api_key_secret) ? 'present' : 'missing'
        : 'not_needed',
    context_tokens: m.context_tokens ?? null,
    default: settings.default_model === m.id,
  }));
}
