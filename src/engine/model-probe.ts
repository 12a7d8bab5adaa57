/*
 * The optional model probe of shadow_doctor: one GET to each configured
 * endpoint's model list, without credentials, no redirects, a short deadline.
 * It tells whether the endpoint answers, not whether a key is accepted. An
 * endpoint that is not loopback is asked only when the project has network
 * permission (shadowcode trust --network), like a task's model requests.
 */
import type { Settings } from '../../gen/types/settings.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { endpointOf, safeUrl } from './models.js';

export interface ProbeResult {
  readonly id: string;
  readonly url: string | null;
  readonly status: 'ok' | 'fail' | 'skipped';
  readonly detail: string;
}

const LIST_PATH: Record<string, string> = { 'openai-compatible': 'models', ollama: 'api/tags', anthropic: 'v1/models' };

export async function probeModels(ticket: GateTicket, settings: Settings, deadlineMs: number, network: boolean): Promise<ProbeResult[]> {
  assertTicket(ticket, 'tool:shadow_doctor.probe');
  return Promise.all(
    (settings.models ?? []).map(async (m): Promise<ProbeResult> => {
      if (!m.base_url) return { id: m.id, url: null, status: 'skipped', detail: 'no base_url configured' };
      const base = safeUrl(m.base_url) as string;
      let loopback: boolean;
      try {
        loopback = endpointOf(m).loopback;
      } catch {
        return { id: m.id, url: base, status: 'skipped', detail: 'the base URL is refused (credentials, query, fragment or scheme)' };
      }
      if (!loopback && !network) return { id: m.id, url: base, status: 'skipped', detail: 'remote endpoint; the project has no network permission (shadowcode trust --network)' };
      const url = new URL(LIST_PATH[m.provider] ?? 'models', base.endsWith('/') ? base : `${base}/`).toString();
      try {
        const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(deadlineMs) });
        await res.body?.cancel();
        return { id: m.id, url, status: res.ok || res.status === 401 || res.status === 403 ? 'ok' : 'fail', detail: `HTTP ${res.status}` };
      } catch (err) {
        return { id: m.id, url, status: 'fail', detail: (err as Error).name === 'TimeoutError' ? `no answer within ${deadlineMs} ms` : 'connection failed' };
      }
    }),
  );
}
