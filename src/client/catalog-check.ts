/*
 * Before a coding CLI is handed the project's servers, each one's live catalog
 * is read through our own client and compared with its pin.
 *
 *   for each server to share ─► target still at the granted hash (targets.ts)
 *   ─► no pin (never reviewed) ─► withheld, not even started
 *   ─► openTarget (gate 'mcp:connect'; a task's read never creates a pin)
 *   ─► pin 'changed' ─► withheld, with the review command   failure ─► withheld, with its code
 *   ─► the check connection is closed and reaped either way
 *
 * The CLI connects on its own afterwards and reads the catalog itself, so only
 * a catalog that matched its pin a moment before is passed.
 */
import type { TaskContext } from '../engine/task-contract.js';
import { asScError } from '../errors.js';
import { taskAsker, trustOf } from '../policy/requests.js';
import { type OpenDeps, openTarget } from './open.js';
import { readPin } from './pins.js';
import { type EnvSource, enabledTargets } from './targets.js';

export interface CheckDeps extends OpenDeps {
  readonly secrets: OpenDeps['secrets'] & EnvSource;
}

/** Why each definition must be withheld (absent from the map: its catalog matches its pin). */
export async function catalogRefusals(deps: CheckDeps, ctx: TaskContext, definitions: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (definitions.length === 0) return out;
  const targets = new Map(enabledTargets(deps.db, ctx.project, deps.policy, deps.secrets).map((t) => [t.id, t]));
  const request = taskAsker(ctx, trustOf(deps.db, ctx.project));
  for (const id of definitions) {
    const t = targets.get(id);
    if (!t) {
      out.set(id, 'the definition changed since it was enabled');
      continue;
    }
    if (!readPin(deps.db, ctx.project, id)) {
      // Never started for a catalog nobody reviewed: the CLI would read it unseen.
      out.set(id, `its tool catalog was never reviewed for this project; run shadowcode --project ${ctx.project} mcp tools ${id} --refresh`);
      continue;
    }
    try {
      const o = await openTarget(deps, request, ctx.project, t, ctx.signal);
      const report = await o.conn.close();
      ctx.emit('mcp.checked', { definition: id, hash: t.hash, catalog_hash: o.catalog_hash, pinned_hash: o.pinned_hash, pin: o.pin, outcome: report.outcome });
      if (o.pin === 'unreviewed') out.set(id, `its tool catalog was never reviewed for this project; run shadowcode --project ${ctx.project} mcp tools ${id} --refresh`);
      if (o.pin === 'changed') out.set(id, `its tool catalog changed since it was pinned (now ${o.catalog_hash}); review it with shadowcode mcp tools ${id}`);
    } catch (err) {
      const e = asScError(err);
      out.set(id, `its catalog could not be checked (${e.code}: ${e.message.slice(0, 300)})`);
    }
  }
  return out;
}
