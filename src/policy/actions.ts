/*
 * The actions a policy knows, read from its rules, for `policy explain`.
 *
 *   rules' action lists ─► names (tool:shadow_status) and families (cli:*)
 *   an action is unknown when no rule names it and no family pattern covers it other
 *   than one whose family the policy also lists by name (tool:* beside tool:shadow_…):
 *   there the names are the whole set, so an unlisted one is a typo, not a new action
 */
import type { Permissions } from '../../gen/types/permissions.js';
import { matchesAction } from './authorize.js';

export interface KnownActions {
  readonly names: readonly string[];
  readonly patterns: readonly string[];
}

/** `also`: actions the code defines that the rules cover only by pattern (the task tools). */
export function knownActions(p: Permissions, also: readonly string[] = []): KnownActions {
  const all = new Set([...p.rules.flatMap((r) => r.actions), ...also]);
  return { names: [...all].filter((a) => !a.endsWith('*')).sort(), patterns: [...all].filter((a) => a.endsWith('*')).sort() };
}

export function isKnownAction(known: KnownActions, action: string): boolean {
  if (known.names.includes(action)) return true;
  return known.patterns.some((pat) => matchesAction(pat, action) && !known.names.some((n) => matchesAction(pat, n)));
}
