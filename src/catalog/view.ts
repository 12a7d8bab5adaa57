/*
 * The catalog as one project sees it: every definition (stored and project
 * files), its grant state here, the cap, stale grants, and the grant history
 * read back from the audit chain with the chain's verification. Names only:
 * never an env or credential value.
 */
import type { CatalogView } from '../../gen/types/catalog-view.js';
import type { Policy } from '../policy/load.js';
import { verifyAudit } from '../store/audit.js';
import { type Db, sql } from '../store/db.js';
import type { Normalized } from './definition.js';
import { projectDefinitions } from './project-files.js';
import { grantsOf, storedDefinitions } from './store.js';

type Entry = CatalogView['definitions'][number];

function describe(id: string, source: Entry['source'], body: Omit<Normalized, 'env'> & { env_names?: string[] }, env: Record<string, string> | undefined, hash: string): Omit<Entry, 'grant'> {
  return {
    id,
    source,
    transport: body.transport,
    ...(body.command ? { executable: body.command[0] as string, argument_count: body.command.length - 1 } : {}),
    ...(body.url ? { url: body.url } : {}),
    env_names: [...new Set([...(body.env_names ?? Object.keys(env ?? {})), ...Object.keys(body.env_refs ?? {})])].sort(),
    credential_names: [...new Set([...Object.values(body.env_refs ?? {}), ...(body.api_key_env ? [body.api_key_env] : [])])].sort(),
    needs_network: body.needs_network,
    ...(body.sandbox ? { sandbox: { ...body.sandbox } as NonNullable<Entry['sandbox']> } : {}),
    hash,
  };
}

/** The current hash of every definition this project could use, by id (refused files have none). */
export function currentHashes(db: Db, project: string | null, policy: Policy): Map<string, string> {
  const m = new Map<string, string>();
  for (const d of storedDefinitions(db)) m.set(d.id, d.hash);
  if (project) for (const p of projectDefinitions(project, policy.limits.definitions)) if (p.ok) m.set(p.id, p.hash);
  return m;
}

/** The tool catalogs pinned with this project's grants (written by the outbound client, src/client/pins.ts). */
function catalogPins(db: Db, project: string | null): Map<string, { pinned_hash: string; seen_hash: string; seen_at: string }> {
  if (!project) return new Map();
  const rows = sql(db, 'SELECT definition_id, pinned_hash, seen_hash, seen_at FROM catalog_pins WHERE project = ?').all(project) as Array<{ definition_id: string; pinned_hash: string; seen_hash: string; seen_at: string }>;
  return new Map(rows.map((r) => [r.definition_id, r]));
}

export type GrantStates = Pick<CatalogView, 'definitions' | 'stale_grants' | 'enabled' | 'cap'>;

/** Definitions and their grant state here; what doctor needs, without the history scan. */
export function grantStates(db: Db, project: string | null, policy: Policy): GrantStates {
  const grants = new Map((project ? grantsOf(db, project) : []).map((g) => [g.definition_id, g]));
  const pins = catalogPins(db, project);
  const defs: Entry[] = [];
  const grantState = (id: string, hash: string | null): Entry['grant'] => {
    const g = grants.get(id);
    if (!g) return { state: 'disabled' };
    const pin = pins.get(id);
    const catalog = pin ? { catalog: { pinned_hash: pin.pinned_hash, last_hash: pin.seen_hash, last_match: pin.pinned_hash === pin.seen_hash, last_seen_at: pin.seen_at } } : {};
    return g.hash === hash
      ? { state: 'enabled', granted_hash: g.hash, ...catalog }
      : { state: 'stale', granted_hash: g.hash, reason: 'the definition changed since it was enabled; enable the new hash or disable it', ...catalog };
  };
  for (const d of storedDefinitions(db)) defs.push({ ...describe(d.id, d.source, d.body, undefined, d.hash), grant: grantState(d.id, d.hash) });
  if (project) {
    for (const p of projectDefinitions(project, policy.limits.definitions)) {
      if (p.ok) defs.push({ ...describe(p.id, 'project', p.def, p.def.env, p.hash), grant: grantState(p.id, p.hash) });
      else defs.push({ id: p.id, source: 'project', transport: null, hash: null, grant: { state: 'refused', reason: `${p.error.code}: ${p.error.message}`.slice(0, 1024) } });
    }
  }
  const known = new Set(defs.map((d) => d.id));
  const stale = [...grants.values()].filter((g) => !known.has(g.definition_id)).map((g) => ({ definition_id: g.definition_id, granted_hash: g.hash, reason: 'the definition no longer exists; disable the grant' }));
  return { definitions: defs, stale_grants: stale, enabled: defs.filter((d) => d.grant.state === 'enabled').length, cap: policy.limits.grants.enabled_servers_per_project };
}

const GRANT_ACTIONS = ['cli:mcp.add', 'cli:mcp.enable', 'cli:mcp.disable', 'cli:mcp.remove', 'cli:plugin.install', 'cli:plugin.remove'];

/**
 * Grant decisions from the audit chain: this project's, plus the profile-wide ones
 * (add, remove, plugins), newest page, oldest first. Each is joined with the
 * outcome its executor recorded, so a refused or empty attempt is not a change.
 */
function grantHistory(db: Db, project: string | null, limit: number): CatalogView['history'] {
  const rows = sql(
    db,
    `SELECT seq, at, body FROM audit WHERE kind = 'decision'
       AND json_extract(body, '$.action') IN (${GRANT_ACTIONS.map(() => '?').join(', ')})
       AND (json_extract(body, '$.project') IS ? OR json_extract(body, '$.action') NOT IN ('cli:mcp.enable', 'cli:mcp.disable'))
     ORDER BY seq DESC LIMIT ?`,
  ).all(...GRANT_ACTIONS, project, limit) as Array<{ seq: number; at: string; body: string }>;
  const first = rows[rows.length - 1]?.seq ?? 0;
  const outcomes = new Map<string, { ok: boolean; changed: boolean; code?: string; hash?: string | null }>();
  for (const o of sql(db, "SELECT body FROM audit WHERE kind = 'grant_outcome' AND seq > ?").all(first) as Array<{ body: string }>) {
    const b = JSON.parse(o.body) as { decision_id: string; ok: boolean; changed: boolean; code?: string; hash?: string | null };
    outcomes.set(b.decision_id, b);
  }
  return rows.reverse().map((r) => {
    const b = JSON.parse(r.body) as { decision_id: string; action: string; allow: boolean; args?: Record<string, unknown> };
    const o = outcomes.get(b.decision_id);
    const result = !b.allow || o?.ok === false ? 'refused' : !o ? 'unknown' : o.changed ? 'applied' : 'unchanged';
    const code = !b.allow ? 'SC_POLICY_DENIED' : o?.ok === false ? o.code : undefined;
    const hash = o?.hash ?? (typeof b.args?.hash === 'string' ? b.args.hash : null);
    return {
      seq: r.seq,
      at: r.at,
      action: b.action.slice(4) as CatalogView['history'][number]['action'],
      allowed: b.allow,
      result,
      ...(code ? { code } : {}),
      id: String(b.args?.id ?? b.args?.name ?? ''),
      hash,
    };
  });
}

export function catalogView(db: Db, project: string | null, policy: Policy): CatalogView {
  const audit = verifyAudit(db);
  return {
    project,
    ...grantStates(db, project, policy),
    ...((history) => ({ history, changes: history.filter((h) => h.result === 'applied').length, refusals: history.filter((h) => h.result === 'refused').length }))(
      grantHistory(db, project, policy.limits.cli.audit_page_size),
    ),
    audit: { ok: audit.ok, rows: audit.rows, first_break: audit.first_break?.seq ?? null },
  };
}
