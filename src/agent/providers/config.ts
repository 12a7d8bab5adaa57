/* What a provider needs, resolved once at task start by createProvider (index.ts). */
import type { ProviderKind } from '../types.js';
import type { WireLimits } from './wire.js';

export interface ProviderConfig {
  readonly id: string;
  readonly kind: ProviderKind;
  readonly model: string;
  /** The checked base URL (engine/models.ts checkBaseUrl). */
  readonly url: URL;
  readonly loopback: boolean;
  /** The key value, or null; only ever placed in a request header. */
  readonly key: string | null;
  readonly contextTokens: number;
  readonly limits: WireLimits;
}

/** gen_ai.provider.name for telemetry: the conventions' well-known names where one applies. */
export function providerName(kind: string): string {
  return kind === 'openai-compatible' ? 'openai' : kind;
}
