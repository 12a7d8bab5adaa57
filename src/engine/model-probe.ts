/*
 * The optional model probe of shadow_doctor: one GET to each configured
 * endpoint's model list, without credentials, no redirects, a short deadline.
 * It tells whether the endpoint answers, not whether a key is accepted.
 */
import type { Settings } from '../../gen/types/settings.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { safeUrl } from './models.js';

export interface ProbeResult {
  readonly id: string;
  readonly url: string | null;
  readonly status: 'ok' | 'fail' | 'skipped';
  readonly detail: string;
}

const LIST_PATH: Record<string, string> = { 'openai-compatible': 'models', ollama: 'api/tags', anthropic: 'v1/models' };

export async function probeModels(ticket: GateTicket, settings: Settings, deadlineMs: number): Promise<ProbeResult[]> {
  assertTicket(ticket, 'tool:shadow_doctor.probe');
  return Promise.all(
    (settings.models ?? []).map(async (m): Promise<ProbeResult> => {
      if (!m.base_url) return { id: m.id, url: null, status: 'skipped', detail: 'no base_url configured' };
      const base = safeUrl(m.base_url) as string;
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
