/*
 * The pure decision. Synchronous, no I/O, never throws.
 *
 *   request ─► ceiling = min(principal flags, project trust/level, requested level)
 *           ─► every rule whose action pattern matches:
 *                 forbid applies ─► deny  (any forbid wins)
 *                 permit applies ─► allow (unless a forbid applied)
 *           ─► nothing applied ─► deny "default-deny"
 *
 * A rule applies when its `when` holds (or it has none) and its `unless` does not
 * hold (or it has none). A missing attribute never satisfies a test, so a forbid
 * with `unless` fails closed. An unexpected exception is a deny, not a crash.
 */
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { Attribute, Condition, Permissions, Test } from '../../gen/types/permissions.js';
import type { Level } from '../ticket.js';

export interface Decision {
  readonly allow: boolean;
  readonly reasons: readonly string[];
  readonly ceiling: Level;
  readonly errors: readonly string[];
}

const RANK: Record<Level, number> = { read_only: 0, workspace: 1, elevated: 2 };
export const LEVELS: readonly Level[] = ['read_only', 'workspace', 'elevated'];

export function minLevel(...levels: Level[]): Level {
  return levels.reduce((a, b) => (RANK[b] < RANK[a] ? b : a), 'elevated');
}

export function isLevel(v: unknown): v is Level {
  return typeof v === 'string' && Object.prototype.hasOwnProperty.call(RANK, v);
}

/** The most a request may do, whatever the rules say. */
export function ceilingOf(req: GateRequest): Level {
  // The person at the CLI is the authority over their own profile; connections get write only by flag.
  const principal: Level = req.principal.kind === 'cli' || req.principal.allow_write ? 'elevated' : 'read_only';
  const project: Level = req.project && req.project.trusted ? req.project.level : 'read_only';
  const levels: Level[] = [principal, project];
  if (req.requested_level) levels.push(req.requested_level);
  return minLevel(...levels);
}

type Attrs = Partial<Record<Attribute, string | boolean | number>>;

function attributes(req: GateRequest, ceiling: Level): Attrs {
  const a: Attrs = {
    'principal.kind': req.principal.kind,
    'principal.owner': req.principal.owner,
    'principal.allow_write': req.principal.allow_write,
    'principal.allow_approvals': req.principal.allow_approvals,
    ceiling,
  };
  if (req.project) {
    a['project.path'] = req.project.path;
    a['project.trusted'] = req.project.trusted;
    a['project.level'] = req.project.level;
    if (req.project.network !== undefined) a['project.network'] = req.project.network;
    if (req.project.holds_home !== undefined) a['project.holds_home'] = req.project.holds_home;
  }
  if (req.requested_level) a.requested_level = req.requested_level;
  if (req.resource?.owner !== undefined) a['resource.owner'] = req.resource.owner;
  if (req.resource?.project !== undefined) a['resource.project'] = req.resource.project;
  if (req.resource?.kind !== undefined) a['resource.kind'] = req.resource.kind;
  if (req.resource?.endpoint_kind !== undefined) a['resource.endpoint_kind'] = req.resource.endpoint_kind;
  if (req.resource?.granted !== undefined) a['resource.granted'] = req.resource.granted;
  if (req.resource?.private_address !== undefined) a['resource.private_address'] = req.resource.private_address;
  return a;
}

function holdsTest(value: Attrs[Attribute], test: Test, attrs: Attrs): boolean {
  if (value === undefined) return false;
  if (test === null || typeof test !== 'object') return value === test;
  if ('equals' in test) {
    const other = attrs[test.equals];
    return other !== undefined && other === value;
  }
  if ('in' in test) return test.in.includes(value);
  if ('at_least' in test) return isLevel(value) && RANK[value] >= RANK[test.at_least];
  return false;
}

/** A frozen condition's tests, listed once (a loaded policy is deep-frozen); one that can change is listed afresh. */
const tests = new WeakMap<Condition, readonly (readonly [Attribute, Test])[]>();

function holds(cond: Condition, attrs: Attrs): boolean {
  let list = tests.get(cond);
  if (!list) {
    list = Object.entries(cond) as [Attribute, Test][];
    if (Object.isFrozen(cond)) tests.set(cond, list);
  }
  for (const [k, t] of list) if (!holdsTest(attrs[k], t, attrs)) return false;
  return true;
}

export function matchesAction(pattern: string, action: string): boolean {
  if (pattern.endsWith('*')) return action.startsWith(pattern.slice(0, -1));
  return pattern === action;
}

type Rule = Permissions['rules'][number];

/**
 * Per rule set, the rules whose action patterns match each action seen. Only a frozen rule
 * set (a loaded policy is deep-frozen) is remembered: one that can still change (a test's
 * copy being edited) is matched afresh on every decision, so the index never goes stale.
 */
const byAction = new WeakMap<Permissions, Map<string, readonly Rule[]> | null>();
/** Actions remembered per rule set; past this, matching is done afresh (an action name can come from a peer). */
const ACTIONS_KEPT = 1024;

const frozen = (p: Permissions) => Object.isFrozen(p) && Object.isFrozen(p.rules) && p.rules.every((r) => Object.isFrozen(r) && Object.isFrozen(r.actions));

/** The rules whose actions match `action`, in policy order. */
function rulesFor(permissions: Permissions, action: string): readonly Rule[] {
  let m = byAction.get(permissions);
  if (m === undefined) byAction.set(permissions, (m = frozen(permissions) ? new Map() : null));
  let rules = m?.get(action);
  if (!rules) {
    rules = permissions.rules.filter((rule) => rule.actions.some((p) => matchesAction(p, action)));
    if (m && m.size < ACTIONS_KEPT) m.set(action, rules);
  }
  return rules;
}

export function authorize(req: GateRequest, permissions: Permissions): Decision {
  let ceiling: Level = 'read_only';
  try {
    ceiling = ceilingOf(req);
    const attrs = attributes(req, ceiling);
    const forbids: string[] = [];
    const permits: string[] = [];
    for (const rule of rulesFor(permissions, req.action)) {
      const applies = (!rule.when || holds(rule.when, attrs)) && (!rule.unless || !holds(rule.unless, attrs));
      if (!applies) continue;
      (rule.effect === 'forbid' ? forbids : permits).push(rule.id);
    }
    if (forbids.length) return { allow: false, reasons: forbids, ceiling, errors: [] };
    if (permits.length) return { allow: true, reasons: permits, ceiling, errors: [] };
    return { allow: false, reasons: ['default-deny'], ceiling, errors: [] };
  } catch (err) {
    return { allow: false, reasons: ['authorize-error'], ceiling, errors: [String((err as Error)?.message ?? err)] };
  }
}
