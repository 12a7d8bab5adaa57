/*
 * An external MCP server definition: parsed safely, validated, normalised and
 * hashed.
 *
 *   .json text ─► JSON.parse (strict) ┐
 *   other text ─► YAML 1.2 core: no tags, bounded aliases ┴► unique keys, errors at line:col
 *   ─► known keys (a typo gets the nearest) ─► transport rules (env only for stdio, absolute executable, loopback
 *   http, https for bearer elsewhere) ─► schemas/definition.schema.json
 *   ─► normalised (defaults filled) ─► SHA-256 of canonical JSON
 *
 * The same content has the same hash whether it came as YAML or JSON.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { type Document, isScalar, parseDocument, visit } from 'yaml';
import type { Definition } from '../../gen/types/definition.js';
import { ScError } from '../errors.js';
import { hostPortText, isLoopbackHost, parseHostPort } from '../policy/net.js';
import { check } from '../schema/validate.js';
import { canonicalJson, sha256 } from '../util/canonical-json.js';
import { jsonProblem } from '../util/json-error.js';
import { packageRoot } from '../util/paths.js';
import { nearest } from '../util/suggest.js';

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
  /** What a stdio server needs beyond the sandbox's defaults; absent when it declares nothing (so older hashes stay). */
  readonly sandbox?: DeclaredSandbox;
}

/** A definition's sandbox key, normalised: paths as written, hosts as HOST or HOST:PORT in lower case. */
export interface DeclaredSandbox {
  readonly read?: readonly string[];
  readonly write?: readonly string[];
  readonly network?: boolean | readonly string[];
}

/** A `.json` file is JSON, strictly; anything else (`.yaml`, `.yml`, a plugin manifest) is YAML. */
export function formatOf(where: string): 'json' | 'yaml' {
  return /\.json$/i.test(where.split(' ')[0] ?? '') ? 'json' : 'yaml';
}

/** `line 3, column 5`, both counted from 1, as editors show them. */
function at(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}

/** The first key that repeats in one mapping, with where its second use is. */
function duplicateKey(doc: Document, text: string): string | undefined {
  let found: string | undefined;
  visit(doc, {
    Map: (_k, map) => {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) {
          const range = (pair.key as { range?: [number, number, number] } | null)?.range;
          found = `duplicate key "${key}"${range ? ` at ${at(text, range[0])}` : ''}`;
          return visit.BREAK;
        }
        seen.add(key);
      }
      return undefined;
    },
  });
  return found;
}

export function parseText(text: string, where: string, limits: DefLimits, format: 'json' | 'yaml' = formatOf(where)): unknown {
  if (Buffer.byteLength(text) > limits.file_bytes) throw new ScError('SC_DEF_INVALID', `${where} is larger than ${limits.file_bytes} bytes`);
  let json: unknown;
  if (format === 'json') {
    try {
      json = JSON.parse(text);
    } catch {
      const problem = jsonProblem(text) ?? { offset: 0, message: 'is not valid JSON' };
      throw new ScError('SC_DEF_INVALID', `${where}: invalid JSON at ${at(text, problem.offset)}: ${problem.message}`);
    }
  }
  // JSON.parse keeps the last of two equal keys without a word, so JSON goes through the YAML reader too, for that check.
  const doc = parseDocument(text, { uniqueKeys: false, customTags: [], prettyErrors: true });
  const dup = duplicateKey(doc, text);
  if (dup) throw new ScError('SC_DEF_INVALID', `${where}: ${dup}`);
  if (format === 'json') return json;
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const pos = problem.linePos?.[0];
    throw new ScError('SC_DEF_INVALID', `${where}: ${problem.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}`);
  }
  let tag: string | undefined;
  visit(doc, { Node: (_k, n) => void (tag ??= (n as { tag?: string }).tag) });
  if (tag) throw new ScError('SC_DEF_INVALID', `${where}: tags such as ${tag} are not accepted`);
  try {
    return doc.toJS({ maxAliasCount: limits.yaml_alias_count });
  } catch (err) {
    throw new ScError('SC_DEF_INVALID', `${where}: ${(err as Error).message}`);
  }
}

/** Every key a definition may have, from the schema's two shapes. */
function knownKeys(): string[] {
  const schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', 'definition.schema.json'), 'utf8')) as { $defs: Record<string, { properties?: Record<string, unknown> }> };
  return [...new Set([...Object.keys(schema.$defs.stdio?.properties ?? {}), ...Object.keys(schema.$defs.http?.properties ?? {})])];
}

/** Names a mistyped key and the one it was probably meant to be, before the schema's less direct message. */
function checkKeys(d: Record<string, unknown>, where: string): void {
  const known = knownKeys();
  for (const key of Object.keys(d)) {
    if (known.includes(key)) continue;
    const suggestion = nearest(key, known);
    throw new ScError('SC_DEF_INVALID', `${where}: unknown key "${key}"${suggestion ? `; did you mean "${suggestion}"?` : ` (known keys: ${known.join(', ')})`}`, { key, ...(suggestion ? { suggestion } : {}) });
  }
}

/** A definition's sandbox key in words, for add, the enable review and the list: what the server gets beyond the defaults. */
export function sandboxWords(s: DeclaredSandbox | undefined): string {
  if (!s) return 'the defaults only: the project read-write, the system read-only, no home, no network';
  const parts = [
    ...(s.read?.length ? [`reads ${s.read.join(', ')}`] : []),
    ...(s.write?.length ? [`writes ${s.write.join(', ')}`] : []),
    s.network === true ? 'the whole network (in a project with network permission)' : Array.isArray(s.network) && s.network.length ? `the network only to ${s.network.join(', ')} (through the proxy)` : 'no network',
  ];
  return parts.join('; ');
}

/** Things that are accepted but probably not what was meant; said once, at add or install. */
export function definitionWarnings(n: Normalized): string[] {
  const out: string[] = [];
  (n.command ?? []).forEach((word, i) => {
    if (word.includes('${')) out.push(`command[${i}] contains "\${", which is passed literally: shadowcode expands no variables in a command (use env_refs for credentials)`);
  });
  if (n.sandbox?.network === true) out.push('sandbox.network is true: the server gets the whole network, and only in a project that has network permission (shadowcode trust --network); a list of hosts is reached through the proxy without it');
  return out;
}

/** The sandbox key as it is hashed and stored: empty parts dropped, hosts canonical, nothing at all when it declares nothing. */
function declaredSandbox(d: NonNullable<Extract<Definition, { command: string[] }>['sandbox']>, where: string): DeclaredSandbox | undefined {
  const hosts = Array.isArray(d.network)
    ? d.network.map((n) => {
        const h = parseHostPort(n);
        if (!h) throw new ScError('SC_DEF_INVALID', `${where}: sandbox.network: ${JSON.stringify(n)} is not HOST or HOST:PORT`);
        return hostPortText(h);
      })
    : undefined;
  const out: { read?: string[]; write?: string[]; network?: boolean | string[] } = {};
  if (d.read?.length) out.read = [...d.read];
  if (d.write?.length) out.write = [...d.write];
  if (d.network === true) out.network = true;
  else if (hosts?.length) out.network = [...new Set(hosts)];
  return Object.keys(out).length ? out : undefined;
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
  if (d && typeof d === 'object' && !Array.isArray(d)) checkKeys(d, where);
  if (d && typeof d === 'object' && 'url' in d && ('env' in d || 'env_refs' in d)) {
    throw new ScError('SC_DEF_INVALID', `${where}: env and env_refs apply to stdio commands only; an HTTP definition takes api_key_env`);
  }
  if (d && typeof d === 'object' && 'url' in d && 'sandbox' in d) throw new ScError('SC_DEF_INVALID', `${where}: sandbox applies to stdio commands only; an HTTP server is not started by shadowcode, so there is nothing to confine`);
  if (d && typeof d === 'object' && 'url' in d && 'command' in d) throw new ScError('SC_DEF_INVALID', `${where}: a definition has either command or url, not both`);
  const def = check<Definition>('definition', data, 'SC_DEF_INVALID', where);
  const base = { name: def.name, description: def.description ?? '', timeout_sec: def.timeout_sec ?? limits.timeout_sec_default };
  if ('command' in def) {
    if (!isAbsolute(def.command[0] as string)) throw new ScError('SC_DEF_INVALID', `${where}: command[0] must be an absolute path to the executable`);
    const sandbox = def.sandbox ? declaredSandbox(def.sandbox, where) : undefined;
    // A stdio server reaches a network only as its definition declares: all of it, or named hosts through the proxy.
    const needs_network = sandbox?.network === true || (Array.isArray(sandbox?.network) && sandbox.network.length > 0);
    return { ...base, transport: 'stdio', command: [...def.command], env_refs: { ...(def.env_refs ?? {}) }, env: { ...(def.env ?? {}) }, needs_network, ...(sandbox ? { sandbox } : {}) };
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
