/*
 * A catalog review: the person at the CLI reads a granted server's tools.
 *
 *   mcp enable ID / mcp tools ID --refresh
 *     ─► the grant's target, still at the granted hash (targets.ts)
 *     ─► openTarget with review=true (gate 'mcp:connect', rule mcp-review):
 *        started once under the grant, catalog scrubbed and canonicalized
 *     ─► no pin yet: this catalog becomes the pin, in front of the user
 *        a pin: the read is recorded as "seen" (match, or changed: --accept HASH)
 *     ─► the connection closed and reaped; nothing is called
 *
 * This is the only way a pin is created, so a task never offers a catalog that
 * nobody was shown.
 */
import type { GateRequest } from '../../gen/types/gate-request.js';
import { ScError } from '../errors.js';
import type { CanonicalTool } from './catalog.js';
import { type OpenDeps, openTarget } from './open.js';
import type { PinState } from './pins.js';
import { type EnvSource, enabledTargets } from './targets.js';

export interface ReviewDeps extends OpenDeps {
  readonly secrets: OpenDeps['secrets'] & EnvSource;
}

export interface Review {
  readonly pin: PinState;
  readonly catalog: CanonicalTool[];
  readonly catalog_hash: string;
  readonly pinned_hash: string | null;
}

export async function reviewCatalog(deps: ReviewDeps, request: Pick<GateRequest, 'principal' | 'project'>, project: string, id: string, signal: AbortSignal = new AbortController().signal): Promise<Review> {
  const t = enabledTargets(deps.db, project, deps.policy, deps.secrets).find((x) => x.id === id);
  if (!t) {
    throw new ScError('SC_DEF_NOT_FOUND', `${id} is not enabled for ${project} at its current hash; see shadowcode --project ${project} mcp, then mcp enable ${id} --hash H`, { id });
  }
  // You at the command line ask, for this project: no task level (policy/requests.ts mcpConnectRequest).
  const o = await openTarget(deps, { principal: request.principal, project: request.project }, project, t, signal, true);
  await o.conn.close();
  return { pin: o.pin, catalog: o.catalog, catalog_hash: o.catalog_hash, pinned_hash: o.pinned_hash };
}
