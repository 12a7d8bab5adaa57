/*
 * The servers a project may reach: its enabled grants whose definition still
 * has the granted hash. Read fresh each time (project files re-read and
 * re-hashed), so a file changed since the grant, since the task started, or
 * while an approval waited is caught at the next action.
 *
 *   grants(project) ─► stored definition (body + literal env from the secret
 *   store, re-hashed) | project file (re-read, re-hashed) ─► hash = granted?
 */
import { type Normalized, definitionHash } from '../catalog/definition.js';
import { projectDefinitions } from '../catalog/project-files.js';
import { grantsOf, storedDefinitions } from '../catalog/store.js';
import { ScError } from '../errors.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';

export interface Target {
  readonly id: string;
  readonly hash: string;
  readonly def: Normalized;
  /** The short name tools are offered under: mcp__<server>__<tool>. */
  readonly server: string;
}

export interface EnvSource {
  definitionEnv(id: string): Record<string, string>;
}

/** Every definition of this project by id, freshly read; a refused or unreadable one is absent. */
function currentDefinitions(db: Db, project: string, policy: Policy, secrets: EnvSource): Map<string, { def: Normalized; hash: string }> {
  const out = new Map<string, { def: Normalized; hash: string }>();
  for (const d of storedDefinitions(db)) {
    const { env_names: _names, ...rest } = d.body;
    const def = { ...rest, env: secrets.definitionEnv(d.id) } as Normalized;
    out.set(d.id, { def, hash: definitionHash(def) });
  }
  for (const p of projectDefinitions(project, policy.limits.definitions)) if (p.ok) out.set(p.id, { def: p.def, hash: p.hash });
  return out;
}

/** The enabled servers of the project, by their granted hash. Stale or missing ones are left out. */
export function enabledTargets(db: Db, project: string, policy: Policy, secrets: EnvSource): Target[] {
  const defs = currentDefinitions(db, project, policy, secrets);
  const out: Target[] = [];
  const used = new Set<string>();
  for (const g of grantsOf(db, project)) {
    const cur = defs.get(g.definition_id);
    if (!cur || cur.hash !== g.hash) continue;
    // Two grants may share a name (config:x and a project x.yaml); the later one gets a suffix, never the same prefix.
    let server = cur.def.name.replace(/[^A-Za-z0-9_-]/g, '_');
    for (let i = 2; used.has(server); i++) server = `${cur.def.name}_${i}`;
    used.add(server);
    out.push({ id: g.definition_id, hash: g.hash, def: cur.def, server });
  }
  return out;
}

/** Re-reads one target's definition and refuses when it is no longer exactly what the task started with. */
export function recheck(db: Db, project: string, policy: Policy, secrets: EnvSource, t: Target): void {
  const cur = currentDefinitions(db, project, policy, secrets).get(t.id);
  if (!cur) throw new ScError('SC_DEF_CHANGED', `${t.id} is gone or unreadable since the task started; the action was not taken`);
  if (cur.hash !== t.hash) throw new ScError('SC_DEF_CHANGED', `${t.id} changed since the task started (hash ${cur.hash.slice(0, 12)}…, granted ${t.hash.slice(0, 12)}…); the action was not taken`);
}
