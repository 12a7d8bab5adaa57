/*
 * Catalog pins: the tool catalog recorded with a grant (project, definition id).
 *
 *   a review read (the person at the CLI: mcp enable, mcp tools --refresh)
 *     with no pin yet ─► pinned, in front of that person
 *   any other read with no pin ─► 'unreviewed', nothing stored; tasks offer
 *     none of the server's tools until a review pins them
 *   later read, same hash ─► match        later read, other hash ─► changed:
 *   stored as "seen", refused for tasks until `mcp tools ID --accept HASH`
 *   makes exactly that seen catalog the pin.
 *
 * A new tool in an otherwise unchanged catalog is a different hash, so it is
 * pending too. Catalogs arrive here already scrubbed of known secret values.
 */
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { type CanonicalTool, catalogHash } from './catalog.js';

export interface Pin {
  readonly pinned_hash: string;
  readonly pinned: CanonicalTool[];
  readonly pinned_at: string;
  readonly seen_hash: string;
  readonly seen: CanonicalTool[];
  readonly seen_at: string;
}

export type PinState = 'pinned' | 'match' | 'changed' | 'unreviewed';

interface Row {
  pinned_hash: string;
  pinned_body: string;
  pinned_at: string;
  seen_hash: string;
  seen_body: string;
  seen_at: string;
}

export function readPin(db: Db, project: string, id: string): Pin | undefined {
  const r = sql(db, 'SELECT pinned_hash, pinned_body, pinned_at, seen_hash, seen_body, seen_at FROM catalog_pins WHERE project = ? AND definition_id = ?').get(project, id) as Row | undefined;
  if (!r) return undefined;
  return { pinned_hash: r.pinned_hash, pinned: JSON.parse(r.pinned_body), pinned_at: r.pinned_at, seen_hash: r.seen_hash, seen: JSON.parse(r.seen_body), seen_at: r.seen_at };
}


/**
 * Records a catalog just read over a connection opened under an mcp:connect
 * decision. Only a review (the user present) may create the pin; pinned_hash is
 * null when there is none.
 */
export function recordCatalog(ticket: GateTicket, db: Db, project: string, id: string, tools: CanonicalTool[], review: boolean): { state: PinState; pinned_hash: string | null; hash: string } {
  assertTicket(ticket, 'mcp:connect');
  const hash = catalogHash(tools);
  const body = JSON.stringify(tools);
  const now = new Date().toISOString();
  return db.transaction(() => {
    const cur = sql(db, 'SELECT pinned_hash FROM catalog_pins WHERE project = ? AND definition_id = ?').get(project, id) as { pinned_hash: string } | undefined;
    if (!cur) {
      if (!review) return { state: 'unreviewed' as const, pinned_hash: null, hash };
      sql(db, 'INSERT INTO catalog_pins (project, definition_id, pinned_hash, pinned_body, pinned_at, seen_hash, seen_body, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(project, id, hash, body, now, hash, body, now);
      return { state: 'pinned' as const, pinned_hash: hash, hash };
    }
    sql(db, 'UPDATE catalog_pins SET seen_hash = ?, seen_body = ?, seen_at = ? WHERE project = ? AND definition_id = ?').run(hash, body, now, project, id);
    return { state: cur.pinned_hash === hash ? ('match' as const) : ('changed' as const), pinned_hash: cur.pinned_hash, hash };
  }).immediate();
}

/** Makes the last seen catalog the pin, when `hash` names exactly it. */
export function acceptCatalog(ticket: GateTicket, db: Db, project: string, id: string, hash: string): { pinned_hash: string; previous_hash: string } {
  assertTicket(ticket, 'cli:mcp.tools.accept');
  return db.transaction(() => {
    const cur = sql(db, 'SELECT pinned_hash, seen_hash FROM catalog_pins WHERE project = ? AND definition_id = ?').get(project, id) as { pinned_hash: string; seen_hash: string } | undefined;
    if (!cur) throw new ScError('SC_MCP_CATALOG_UNREVIEWED', `no catalog of ${id} has been reviewed for this project yet; read it with shadowcode mcp tools ${id} --refresh`, { id });
    if (cur.seen_hash !== hash) throw new ScError('SC_HASH_MISMATCH', `--accept does not match the last catalog read from ${id}; review it with shadowcode mcp tools ${id}`, { id, current_hash: cur.seen_hash });
    sql(db, 'UPDATE catalog_pins SET pinned_hash = seen_hash, pinned_body = seen_body, pinned_at = ? WHERE project = ? AND definition_id = ?').run(new Date().toISOString(), project, id);
    return { pinned_hash: hash, previous_hash: cur.pinned_hash };
  }).immediate();
}
