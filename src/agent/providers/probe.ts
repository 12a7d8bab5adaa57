/*
 * `shadowcode model probe ID`: one GET to the endpoint's model list, with the
 * key, asked for by the person at the terminal (action cli:model.probe).
 *
 *   entry ─► resolveModel (URL, key, https rule) ─► GET {base}/models | {base}/v1/models
 *         ─► status within models.probe_ms, body discarded, redirects refused
 *
 * It tells whether the endpoint answers and accepts the key, and whether the
 * model is listed when the answer names models; it never sends a prompt.
 */
import http from 'node:http';
import https from 'node:https';
import type { Limits } from '../../../gen/types/limits.js';
import type { SettingsModel } from '../../engine/models.js';
import type { SecretStore } from '../../store/secrets.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { ANTHROPIC_VERSION } from './anthropic.js';
import { resolveModel } from './index.js';
import { loopbackOnly } from './wire.js';

export interface ModelProbe {
  readonly id: string;
  readonly url: string;
  readonly endpoint: 'loopback' | 'remote';
  readonly ok: boolean;
  readonly http_status: number | null;
  /** Whether the model list names the configured model; null when it could not be read. */
  readonly model_listed: boolean | null;
  readonly detail: string;
}

export function probeModel(ticket: GateTicket, entry: SettingsModel, deps: { env: NodeJS.ProcessEnv; secrets: SecretStore; limits: Limits['models'] }): Promise<ModelProbe> {
  assertTicket(ticket, 'cli:model.probe');
  const { ep, key } = resolveModel(entry, deps);
  const base = ep.url.toString();
  const url = new URL(entry.provider === 'anthropic' ? 'v1/models' : 'models', base.endsWith('/') ? base : `${base}/`);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key && entry.provider === 'anthropic') headers['x-api-key'] = key;
  if (key && entry.provider !== 'anthropic') headers.authorization = `Bearer ${key}`;
  if (entry.provider === 'anthropic') headers['anthropic-version'] = ANTHROPIC_VERSION;
  const ms = deps.limits.probe_ms;
  const cap = deps.limits.error_body_bytes * 64;
  const result = (ok: boolean, status: number | null, listed: boolean | null, detail: string): ModelProbe => ({ id: entry.id, url: url.toString(), endpoint: ep.loopback ? 'loopback' : 'remote', ok, http_status: status, model_listed: listed, detail });
  return new Promise((resolve) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(url, { agent: false, headers, ...(url.hostname.toLowerCase() === 'localhost' ? { lookup: loopbackOnly } : {}) }, (res) => {
      const status = res.statusCode ?? 0;
      const parts: Buffer[] = [];
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
        if (bytes <= cap) parts.push(d);
        else res.destroy();
      });
      res.on('close', () => {
        clearTimeout(timer);
        if (status >= 300 && status < 400) return resolve(result(false, status, null, `HTTP ${status}: redirect refused; configure the final URL`));
        if (status === 401 || status === 403) return resolve(result(false, status, null, `HTTP ${status}: the endpoint answers but refuses the key`));
        if (status < 200 || status >= 300) return resolve(result(false, status, null, `HTTP ${status}`));
        let listed: boolean | null = null;
        try {
          const j = JSON.parse(Buffer.concat(parts).toString('utf8')) as { data?: Array<{ id?: unknown }> };
          if (Array.isArray(j.data)) listed = j.data.some((m) => m && m.id === entry.model);
        } catch {
          listed = null; // not a model list we can read; the endpoint still answered
        }
        resolve(result(true, status, listed, listed === false ? `HTTP ${status}; the model ${entry.model} is not in the endpoint's list` : `HTTP ${status}`));
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(result(false, null, null, `no answer within ${ms} ms`));
    }, ms);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(result(false, null, null, `connection failed (${err.code ?? 'error'})`));
    });
  });
}
