/*
 * The canonical form of a server's tool catalog, its hash, and a readable diff.
 *
 *   tools/list pages ─► per tool {name, title, description, input_schema,
 *   output_schema, annotations} with absent and default annotation values filled
 *   in (so a server that omits them on reconnect is not a change) ─► sorted by
 *   name ─► SHA-256 of canonical JSON
 *
 * Everything the model or the user could be steered by is in the hash: names,
 * descriptions, both schemas (parameter names and nested descriptions too) and
 * annotations. A title given only as annotations.title is the same as title.
 */
import { canonicalJson, sha256 } from '../util/canonical-json.js';

export interface CanonicalTool {
  readonly name: string;
  readonly title: string | null;
  readonly description: string;
  readonly input_schema: Record<string, unknown>;
  readonly output_schema: Record<string, unknown> | null;
  readonly annotations: Record<string, unknown>;
}

// The MCP defaults of each hint, so "absent" and "stated as the default" hash alike.
const ANNOTATION_DEFAULTS: Record<string, boolean> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function canonicalTool(raw: Record<string, unknown>): CanonicalTool {
  const ann = isObject(raw.annotations) ? { ...raw.annotations } : {};
  const annTitle = typeof ann.title === 'string' ? ann.title : null;
  delete ann.title;
  for (const [k, d] of Object.entries(ANNOTATION_DEFAULTS)) ann[k] = typeof ann[k] === 'boolean' ? ann[k] : d;
  return {
    name: String(raw.name),
    title: typeof raw.title === 'string' ? raw.title : annTitle,
    description: typeof raw.description === 'string' ? raw.description : '',
    input_schema: isObject(raw.inputSchema) ? raw.inputSchema : { type: 'object' },
    output_schema: isObject(raw.outputSchema) ? raw.outputSchema : null,
    annotations: ann,
  };
}

export function canonicalCatalog(tools: readonly Record<string, unknown>[]): CanonicalTool[] {
  return tools.map(canonicalTool).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function catalogHash(tools: readonly CanonicalTool[]): string {
  return sha256(canonicalJson(tools));
}

export interface ToolChange {
  readonly name: string;
  readonly fields: string[];
  readonly description?: { readonly before: string; readonly after: string };
  /** JSON paths that differ, per schema or annotations. */
  readonly paths: Record<string, string[]>;
}

export interface CatalogDiff {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: ToolChange[];
}

function diffPaths(a: unknown, b: unknown, at: string, out: string[], budget = 64): void {
  if (out.length >= budget) return;
  if (canonicalJson(a) === canonicalJson(b)) return;
  if (isObject(a) && isObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) diffPaths(a[k], b[k], `${at}/${k}`, out, budget);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((v, i) => diffPaths(v, b[i], `${at}/${i}`, out, budget));
    return;
  }
  out.push(at || '/');
}

export function diffCatalogs(before: readonly CanonicalTool[], after: readonly CanonicalTool[]): CatalogDiff {
  const old = new Map(before.map((t) => [t.name, t]));
  const now = new Map(after.map((t) => [t.name, t]));
  const changed: ToolChange[] = [];
  for (const [name, b] of now) {
    const a = old.get(name);
    if (!a) continue;
    const fields = (['title', 'description', 'input_schema', 'output_schema', 'annotations'] as const).filter((f) => canonicalJson(a[f]) !== canonicalJson(b[f]));
    if (!fields.length) continue;
    const paths: Record<string, string[]> = {};
    for (const f of fields) if (f !== 'description' && f !== 'title') diffPaths(a[f], b[f], '', (paths[f] = []));
    changed.push({ name, fields, ...(fields.includes('description') ? { description: { before: a.description, after: b.description } } : {}), paths });
  }
  return {
    added: [...now.keys()].filter((n) => !old.has(n)).sort(),
    removed: [...old.keys()].filter((n) => !now.has(n)).sort(),
    changed,
  };
}
