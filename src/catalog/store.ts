/*
 * Stored definitions (config:NAME, plugin:P/S) and grants. Every change is an
 * executor behind the gate, and runs in one immediate transaction, so two CLI
 * processes cannot interleave a read-check-write of the same definition.
 *
 * Each change, applied or refused, leaves a `grant_outcome` audit row tied to its
 * gate decision, so the audit view counts only what really changed and shows a
 * refusal as a refusal, with the hash it was about:
 *
 *   decision (gate) ─► executor ─► applied:  outcome {ok, changed, id, hash} in the same transaction
 *                               └► refused:  outcome {ok: false, code, id, hash} after the rollback
 *
 * A grant records the canonical project, the definition id and the hash it was
 * granted for. Removing a definition removes every grant of it, so identical
 * content added again is not enabled anywhere.
 */
import { ScError } from '../errors.js';
import { appendAudit } from '../store/audit.js';
import { type Db, sql } from '../store/db.js';
import type { SecretStore } from '../store/secrets.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { definitionHash, type Normalized, publicView } from './definition.js';
import { didYouMean } from '../util/suggest.js';

export interface StoredDef {
  readonly id: string;
  readonly source: 'config' | 'plugin';
  readonly plugin: string | null;
  readonly body: ReturnType<typeof publicView>;
  readonly hash: string;
}

export interface GrantRow {
  readonly project: string;
  readonly definition_id: string;
  readonly hash: string;
  readonly granted_at: string;
}

export function storedDefinitions(db: Db): StoredDef[] {
  return (sql(db, 'SELECT id, source, plugin, body, hash FROM definitions ORDER BY id').all() as Array<Record<string, string>>).map((r) => ({ ...r, body: JSON.parse(r.body as string) }) as StoredDef);
}

export function storedDefinition(db: Db, id: string): StoredDef | undefined {
  return storedDefinitions(db).find((d) => d.id === id);
}

export function grantsOf(db: Db, project: string): GrantRow[] {
  return sql(db, 'SELECT * FROM grants WHERE project = ? ORDER BY definition_id').all(project) as GrantRow[];
}

function put(db: Db, id: string, source: 'config' | 'plugin', plugin: string | null, n: Normalized): string {
  const hash = definitionHash(n);
  const now = new Date().toISOString();
  sql(db, `INSERT INTO definitions (id, source, plugin, body, hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET body = excluded.body, hash = excluded.hash, updated_at = excluded.updated_at`).run(id, source, plugin, JSON.stringify(publicView(n)), hash, now, now);
  return hash;
}

interface Outcome {
  readonly changed: boolean;
  readonly id: string;
  readonly hash?: string | null;
  readonly project?: string | null;
}

/** Runs one change in an immediate transaction and records how it ended, against the gate's decision. */
function recorded<T>(ticket: GateTicket, db: Db, about: Omit<Outcome, 'changed'>, fn: () => { result: T; outcome: Outcome }): T {
  assertTicket(ticket, ['cli:mcp.add', 'cli:mcp.remove', 'cli:mcp.enable', 'cli:mcp.disable', 'cli:plugin.install', 'cli:plugin.remove']);
  const base = { decision_id: ticket.decisionId, action: ticket.action.slice(4) };
  try {
    return db
      .transaction(() => {
        const { result, outcome } = fn();
        appendAudit(db, 'grant_outcome', { ...base, ok: true, ...outcome });
        return result;
      })
      .immediate();
  } catch (err) {
    // The change rolled back; the refusal is still recorded, so the view does not count it as a change.
    appendAudit(db, 'grant_outcome', { ...base, ok: false, changed: false, ...about, code: err instanceof ScError ? err.code : 'SC_INTERNAL' });
    throw err;
  }
}

export function addDefinition(ticket: GateTicket, db: Db, secrets: SecretStore, n: Normalized, replaceHash: string | undefined): { id: string; hash: string; replaced: boolean; unchanged: boolean } {
  assertTicket(ticket, 'cli:mcp.add');
  const id = `config:${n.name}`;
  const hash = definitionHash(n);
  const result = recorded(ticket, db, { id, hash }, () => {
    const cur = sql(db, 'SELECT hash FROM definitions WHERE id = ?').get(id) as { hash: string } | undefined;
    // The same content again changes nothing, so it needs no --hash and is not an error.
    if (cur && cur.hash === hash) return { result: { id, hash, replaced: false, unchanged: true }, outcome: { changed: false, id, hash } };
    if (cur && replaceHash === undefined) throw new ScError('SC_DEF_EXISTS', `${id} exists; to replace it pass --hash ${cur.hash}`, { id, current_hash: cur.hash });
    if (cur && replaceHash !== cur.hash) throw new ScError('SC_HASH_MISMATCH', `--hash does not match the current content of ${id}`, { id, current_hash: cur.hash });
    if (!cur && replaceHash !== undefined) throw new ScError('SC_DEF_NOT_FOUND', `${id} does not exist yet; add it without --hash`);
    put(db, id, 'config', null, n);
    return { result: { id, hash, replaced: cur !== undefined, unchanged: false }, outcome: { changed: true, id, hash } };
  });
  if (!result.unchanged) secrets.putDefinitionEnv(ticket, id, n.env);
  return result;
}

export function removeDefinition(ticket: GateTicket, db: Db, secrets: SecretStore, id: string, hash: string): { id: string; grants_removed: number } {
  assertTicket(ticket, 'cli:mcp.remove');
  const out = recorded(ticket, db, { id, hash }, () => {
    const cur = sql(db, 'SELECT hash, source FROM definitions WHERE id = ?').get(id) as { hash: string; source: string } | undefined;
    if (!cur || cur.source !== 'config') throw new ScError('SC_DEF_NOT_FOUND', `no stored definition ${id}${id.startsWith('plugin:') ? '; remove its plugin instead' : didYouMean(id, storedDefinitions(db).filter((d) => d.source === 'config').map((d) => d.id))}`);
    if (cur.hash !== hash) throw new ScError('SC_HASH_MISMATCH', `--hash does not match the current content of ${id}`, { id, current_hash: cur.hash });
    const grants = sql(db, 'DELETE FROM grants WHERE definition_id = ?').run(id).changes;
    sql(db, 'DELETE FROM definitions WHERE id = ?').run(id);
    return { result: { id, grants_removed: grants }, outcome: { changed: true, id, hash } };
  });
  secrets.putDefinitionEnv(ticket, id, {});
  return out;
}

/** Grants (or re-grants at a new hash) one definition to one trusted project, within the cap. */
export function enableGrant(ticket: GateTicket, db: Db, project: string, id: string, hash: string, currentHash: string | undefined, cap: number): GrantRow {
  assertTicket(ticket, 'cli:mcp.enable');
  return recorded(ticket, db, { id, hash, project }, () => {
    if (currentHash === undefined) throw new ScError('SC_DEF_NOT_FOUND', `no definition ${id} for this project${didYouMean(id, storedDefinitions(db).map((d) => d.id))}`);
    if (hash !== currentHash) throw new ScError('SC_HASH_MISMATCH', `--hash does not match the current content of ${id}; review it with shadowcode mcp`, { id, current_hash: currentHash });
    const existing = sql(db, 'SELECT hash FROM grants WHERE project = ? AND definition_id = ?').get(project, id) as { hash: string } | undefined;
    const n = (sql(db, 'SELECT count(*) AS n FROM grants WHERE project = ?').get(project) as { n: number }).n;
    if (!existing && n >= cap) throw new ScError('SC_GRANT_LIMIT', `this project already has ${n} enabled servers, the most allowed (${cap}); disable one first`);
    if (existing?.hash !== hash) {
      sql(db, `INSERT INTO grants (project, definition_id, hash, granted_at) VALUES (?, ?, ?, ?)
               ON CONFLICT(project, definition_id) DO UPDATE SET hash = excluded.hash, granted_at = excluded.granted_at`).run(project, id, hash, new Date().toISOString());
    }
    const row = sql(db, 'SELECT * FROM grants WHERE project = ? AND definition_id = ?').get(project, id) as GrantRow;
    return { result: row, outcome: { changed: existing?.hash !== hash, id, hash, project } };
  });
}

export function disableGrant(ticket: GateTicket, db: Db, project: string, id: string): boolean {
  assertTicket(ticket, 'cli:mcp.disable');
  return recorded(ticket, db, { id, project }, () => {
    const cur = sql(db, 'SELECT hash FROM grants WHERE project = ? AND definition_id = ?').get(project, id) as { hash: string } | undefined;
    if (cur) sql(db, 'DELETE FROM grants WHERE project = ? AND definition_id = ?').run(project, id);
    return { result: cur !== undefined, outcome: { changed: cur !== undefined, id, hash: cur?.hash ?? null, project } };
  });
}

export function installPlugin(ticket: GateTicket, db: Db, name: string, version: string, servers: Normalized[]): Array<{ id: string; hash: string }> {
  assertTicket(ticket, 'cli:plugin.install');
  return recorded(ticket, db, { id: name }, () => {
    const ids = servers.map((s) => `plugin:${name}/${s.name}`);
    const old = sql(db, 'SELECT id FROM definitions WHERE plugin = ?').all(name) as Array<{ id: string }>;
    for (const o of old) if (!ids.includes(o.id)) {
      sql(db, 'DELETE FROM grants WHERE definition_id = ?').run(o.id);
      sql(db, 'DELETE FROM definitions WHERE id = ?').run(o.id);
    }
    sql(db, 'INSERT INTO plugins (name, version, installed_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET version = excluded.version, installed_at = excluded.installed_at').run(name, version, new Date().toISOString());
    const result = servers.map((s, i) => ({ id: ids[i] as string, hash: put(db, ids[i] as string, 'plugin', name, s) }));
    return { result, outcome: { changed: true, id: name } };
  });
}

export function removePlugin(ticket: GateTicket, db: Db, name: string): { removed: string[]; grants_removed: number } {
  assertTicket(ticket, 'cli:plugin.remove');
  return recorded(ticket, db, { id: name }, () => {
    if (!sql(db, 'SELECT 1 FROM plugins WHERE name = ?').get(name)) throw new ScError('SC_PLUGIN_NOT_FOUND', `no plugin ${JSON.stringify(name)} is installed`);
    const ids = (sql(db, 'SELECT id FROM definitions WHERE plugin = ?').all(name) as Array<{ id: string }>).map((r) => r.id);
    let grants = 0;
    for (const id of ids) grants += sql(db, 'DELETE FROM grants WHERE definition_id = ?').run(id).changes;
    sql(db, 'DELETE FROM definitions WHERE plugin = ?').run(name);
    sql(db, 'DELETE FROM plugins WHERE name = ?').run(name);
    return { result: { removed: ids, grants_removed: grants }, outcome: { changed: true, id: name } };
  });
}
