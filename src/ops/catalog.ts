/*
 * External servers as operations: the catalog view (definitions, grants, the audit of grant
 * changes), a grant's pinned tool catalog, reading it again, and accepting a changed one.
 *
 *   showCatalog(ops)          ─► catalogView(project or none) ─► checked against schemas/catalog-view.schema.json
 *   showPin(ops, id)          ─► the pin of the project's grant: pinned tools, what the last read saw,
 *                                and the diff when they differ (no pin: none reviewed, no tools offered)
 *   refreshPin(ops, id)       ─► client/review.ts: the server started once (gate mcp:connect, the caller
 *                                reviewing), its catalog read; no pin yet: it becomes the pin
 *   acceptPin(ops, id, hash)  ─► gate cli:mcp.tools.accept ─► the last seen catalog becomes the pin
 */
import type { CatalogView } from '../../gen/types/catalog-view.js';
import { storedDefinition, storedDefinitions } from '../catalog/store.js';
import { catalogView } from '../catalog/view.js';
import { type CanonicalTool, type CatalogDiff, diffCatalogs } from '../client/catalog.js';
import { acceptCatalog, type PinState, readPin } from '../client/pins.js';
import { reviewCatalog } from '../client/review.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { check } from '../schema/validate.js';
import { nearest } from '../util/suggest.js';
import { type OpsContext, projectOf } from './context.js';

export type { CatalogView };

/** A grant's pinned catalog: none reviewed yet, the pin matching the last read, or a changed catalog awaiting acceptance. */
export type PinView =
  | { readonly id: string; readonly pinned_hash: null; readonly last_hash: null; readonly last_match: null; readonly tools: []; readonly diff: null }
  | {
      readonly id: string;
      readonly pinned_hash: string;
      readonly pinned_at: string;
      readonly last_hash: string;
      readonly last_seen_at: string;
      readonly last_match: true;
      readonly tools: CanonicalTool[];
      readonly diff: null;
    }
  | {
      readonly id: string;
      readonly pinned_hash: string;
      readonly pinned_at: string;
      readonly last_hash: string;
      readonly last_seen_at: string;
      readonly last_match: false;
      readonly tools: CanonicalTool[];
      readonly diff: CatalogDiff;
      readonly seen_tools: CanonicalTool[];
    };

/** What a read of the catalog found: it became the pin, it matches the pin, or it differs. */
export interface PinRead {
  readonly state: PinState;
  readonly hash: string;
}

export interface AcceptResult {
  readonly id: string;
  readonly pinned_hash: string;
  readonly previous_hash: string;
  /** false: that catalog was the pinned one already. */
  readonly changed: boolean;
}

export function showCatalog(ops: Pick<OpsContext, 'db' | 'project' | 'policy'>): CatalogView {
  return check<CatalogView>('catalog-view', catalogView(ops.db(), ops.project ?? null, ops.policy), 'SC_INTERNAL', 'catalog view');
}

export function showPin(ops: Pick<OpsContext, 'db' | 'project'>, id: string): PinView {
  const project = projectOf(ops, 'mcp tools');
  const db = ops.db();
  const pin = readPin(db, project, id);
  // With no pin, a stored id (config:, plugin:) that names no definition is a mistake, not an
  // empty catalog. A project file's definition (project:) lives in the project, not the store.
  if (!pin && !id.startsWith('project:') && storedDefinition(db, id) === undefined) {
    const suggestion = nearest(id, storedDefinitions(db).map((d) => d.id));
    throw new ScError('SC_DEF_NOT_FOUND', `no stored definition ${id}${suggestion ? `; did you mean ${suggestion}?` : ''} (shadowcode mcp lists them)`, { id, ...(suggestion ? { suggestion } : {}) });
  }
  if (!pin) return { id, pinned_hash: null, last_hash: null, last_match: null, tools: [], diff: null };
  const base = { id, pinned_hash: pin.pinned_hash, pinned_at: pin.pinned_at, last_hash: pin.seen_hash, last_seen_at: pin.seen_at };
  if (pin.pinned_hash === pin.seen_hash) return { ...base, last_match: true, tools: pin.pinned, diff: null };
  return { ...base, last_match: false, tools: pin.pinned, diff: diffCatalogs(pin.pinned, pin.seen), seen_tools: pin.seen };
}

export async function refreshPin(ops: OpsContext, id: string, signal?: AbortSignal): Promise<PinRead> {
  const project = projectOf(ops, 'mcp tools');
  const r = await reviewCatalog({ env: ops.env, secrets: ops.secrets(), policy: ops.policy, db: ops.db(), gateEnv: ops.gate }, ops.request('mcp:connect'), project, id, signal);
  return { state: r.pin, hash: r.catalog_hash };
}

export async function acceptPin(ops: OpsContext, id: string, hash: string): Promise<AcceptResult> {
  const project = projectOf(ops, 'mcp tools');
  const db = ops.db();
  if (!/^[0-9a-f]{64}$/.test(hash)) throw new ScError('SC_BAD_VALUE', `--accept takes the full 64-character catalog hash that shadowcode --project ${project} mcp tools ${id} shows`);
  const r = await enforce(ops.gate, ops.request('cli:mcp.tools.accept', { resource: { kind: 'catalog', id, hash }, args: { id, hash } }), (t) => acceptCatalog(t, db, project, id, hash));
  return { id, pinned_hash: r.pinned_hash, previous_hash: r.previous_hash, changed: r.previous_hash !== r.pinned_hash };
}
