/*
 * An external MCP server definition: parsed safely, validated, normalised and
 * hashed.
 *
 *   YAML or JSON text (≤ file cap) ─► YAML 1.2 core: no tags, unique keys, bounded
 *   aliases ─► transport rules (env only for stdio, absolute executable, loopback
 *   http, https for bearer elsewhere) ─► schemas/definition.schema.json
 *   ─► normalised (defaults filled) ─► SHA-256 of canonical JSON
 *
 * The same content has the same hash whether it came as YAML or JSON.
 */
import { isAbsolute } from 'node:path';
import { parseDocument, visit } from 'yaml';
import type { Definition } from '../../gen/types/definition.js';
import { ScError } from '../errors.js';
import { isLoopbackHost } from '../policy/net.js';
import { check } from '../schema/validate.js';
import { canonicalJson, sha256 } from '../util/canonical-json.js';

export interface DefLimits {
  readonly file_bytes: number;
  readonly yaml_alias_count: number;
  readonly timeout_sec_default: number;
}

export interface Normalized {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  readonly command?: string[];
  readonly url?: string;
  readonly description: string;
  readonly timeout_sec: number;
  readonly env_refs: Record<string, string>;
  readonly env: Record<string, string>;
  readonly api_key_env?: string;
  readonly needs_network: boolean;
}

export function parseText(text: string, where: string, limits: DefLimits): unknown {
  if (Buffer.byteLength(text) > limits.file_bytes) throw new ScError('SC_DEF_INVALID', `${where} is larger than ${limits.file_bytes} bytes`);
  const doc = parseDocument(text, { uniqueKeys: true, customTags: [], prettyErrors: false });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw new ScError('SC_DEF_INVALID', `${where}: ${problem.message.split('\n')[0]}`);
  let tag: string | undefined;
  visit(doc, { Node: (_k, n) => void (tag ??= (n as { tag?: string }).tag) });
  if (tag) throw new ScError('SC_DEF_INVALID', `${where}: tags such as ${tag} are not accepted`);
  try {
    return doc.toJS({ maxAliasCount: limits.yaml_alias_count });
  } catch (err) {
    throw new ScError('SC_DEF_INVALID', `${where}: ${(err as Error).message}`);
  }
}

function checkUrl(raw: string, bearer: boolean, where: string): { url: string; needs_network: boolean } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ScError('SC_DEF_INVALID', `${where}: url is not a URL`);
  }
  if (u.username || u.password) throw new ScError('SC_DEF_INVALID', `${where}: url must not contain credentials; use api_key_env`);
  if (u.search || raw.includes('?') || u.hash || raw.includes('#')) throw new ScError('SC_DEF_INVALID', `${where}: url must not contain a query or a fragment`);
  const host = u.hostname;
  const loopback = isLoopbackHost(host);
  if (u.protocol === 'http:' && !loopback) throw new ScError('SC_DEF_INVALID', `${where}: plain http is only for loopback hosts; use https for ${host}`);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ScError('SC_DEF_INVALID', `${where}: url must be http or https`);
  if (bearer && !loopback && u.protocol !== 'https:') throw new ScError('SC_DEF_INVALID', `${where}: a bearer credential needs https outside loopback`);
  return { url: u.toString(), needs_network: !loopback };
}

export function normalize(data: unknown, where: string, limits: DefLimits): Normalized {
  const d = data as Record<string, unknown> | null;
  if (d && typeof d === 'object' && 'url' in d && ('env' in d || 'env_refs' in d)) {
    throw new ScError('SC_DEF_INVALID', `${where}: env and env_refs apply to stdio commands only; an HTTP definition takes api_key_env`);
  }
  if (d && typeof d === 'object' && 'url' in d && 'command' in d) throw new ScError('SC_DEF_INVALID', `${where}: a definition has either command or url, not both`);
  const def = check<Definition>('definition', data, 'SC_DEF_INVALID', where);
  const base = { name: def.name, description: def.description ?? '', timeout_sec: def.timeout_sec ?? limits.timeout_sec_default };
  if ('command' in def) {
    if (!isAbsolute(def.command[0] as string)) throw new ScError('SC_DEF_INVALID', `${where}: command[0] must be an absolute path to the executable`);
    return { ...base, transport: 'stdio', command: [...def.command], env_refs: { ...(def.env_refs ?? {}) }, env: { ...(def.env ?? {}) }, needs_network: false };
  }
  const { url, needs_network } = checkUrl(def.url, def.api_key_env !== undefined, where);
  return { ...base, transport: 'http', url, env_refs: {}, env: {}, ...(def.api_key_env ? { api_key_env: def.api_key_env } : {}), needs_network };
}

export function definitionHash(n: Normalized): string {
  return sha256(canonicalJson(n));
}

/** What may be shown or stored outside the secret store: literal env values replaced by nothing but their names. */
export function publicView(n: Normalized): Omit<Normalized, 'env'> & { env_names: string[] } {
  const { env, ...rest } = n;
  return { ...rest, env_names: Object.keys(env).sort() };
}
