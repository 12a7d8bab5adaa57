import fc from 'fast-check';
import t from 'tap';
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { Permissions } from '../../gen/types/permissions.js';
import { authorize, ceilingOf, LEVELS, matchesAction, minLevel } from '../../src/policy/authorize.js';
import { shippedPolicy } from '../../src/policy/load.js';

const level = fc.constantFrom(...LEVELS);
const request: fc.Arbitrary<GateRequest> = fc.record(
  {
    action: fc.constantFrom('tool:shadow_status', 'tool:shadow_memory.append', 'tool:shadow_approve.approve', 'cli:trust', 'resource:shadow://plan', 'tool:x', 'net:y'),
    principal: fc.record({
      kind: fc.constantFrom('cli', 'stdio', 'http', 'engine'),
      owner: fc.constantFrom('a', 'b', 'cli'),
      allow_write: fc.boolean(),
      allow_approvals: fc.boolean(),
    }),
    project: fc.option(fc.record({ path: fc.constantFrom('/p', '/q'), trusted: fc.boolean(), level }), { nil: null }),
    requested_level: level,
    resource: fc.record({ kind: fc.constantFrom('job', 'goal', 'file'), owner: fc.constantFrom('a', 'b'), project: fc.constantFrom('/p', '/q') }, { requiredKeys: [] }),
  },
  { requiredKeys: ['action', 'principal', 'project'] },
) as fc.Arbitrary<GateRequest>;

t.test('the ceiling never exceeds the project level, the server flags or the requested level', async () => {
  fc.assert(
    fc.property(request, (req) => {
      const c = ceilingOf(req);
      const rank = (l: string) => LEVELS.indexOf(l as (typeof LEVELS)[number]);
      if (req.requested_level && rank(c) > rank(req.requested_level)) return false;
      if (req.project?.trusted && rank(c) > rank(req.project.level)) return false;
      if (!req.project?.trusted && c !== 'read_only') return false;
      if (req.principal.kind !== 'cli' && !req.principal.allow_write && c !== 'read_only') return false;
      return true;
    }),
    { numRuns: 2000 },
  );
});

t.test('authorize never throws and always names at least one reason', async () => {
  const policy = shippedPolicy();
  fc.assert(
    fc.property(request, (req) => {
      const d = authorize(req, policy.permissions);
      return d.reasons.length > 0 && typeof d.allow === 'boolean';
    }),
    { numRuns: 2000 },
  );
});

t.test('a matching forbid wins over any number of permits', async (t) => {
  const rules: Permissions = {
    version: 1,
    rules: [
      { id: 'p1', effect: 'permit', description: 'x', actions: ['tool:*'] },
      { id: 'f1', effect: 'forbid', description: 'x', actions: ['tool:shadow_status'] },
      { id: 'p2', effect: 'permit', description: 'x', actions: ['tool:shadow_status'] },
    ],
  };
  const d = authorize({ action: 'tool:shadow_status', principal: { kind: 'stdio', owner: 'a', allow_write: false, allow_approvals: false }, project: null }, rules);
  t.equal(d.allow, false);
  t.same(d.reasons, ['f1']);
});

t.test('no matching rule denies by default', async (t) => {
  const d = authorize({ action: 'tool:anything', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, { version: 1, rules: [] });
  t.same(d, { allow: false, reasons: ['default-deny'], ceiling: 'read_only', errors: [] });
});

t.test('a rule that throws while being evaluated denies instead of crashing', async (t) => {
  const hostile = { version: 1, rules: [{ id: 'boom', effect: 'permit', description: 'x', get actions(): string[] { throw new Error('bad rule'); } }] } as unknown as Permissions;
  const d = authorize({ action: 'tool:x', principal: { kind: 'stdio', owner: 'a', allow_write: false, allow_approvals: false }, project: null }, hostile);
  t.equal(d.allow, false);
  t.same(d.reasons, ['authorize-error']);
  t.match(d.errors[0], /bad rule/);
});

t.test('a missing attribute never satisfies a test, so an unless-forbid fails closed', async (t) => {
  const rules: Permissions = {
    version: 1,
    rules: [
      { id: 'p', effect: 'permit', description: 'x', actions: ['tool:y'] },
      { id: 'f', effect: 'forbid', description: 'x', actions: ['tool:y'], unless: { 'resource.owner': { equals: 'principal.owner' } } },
    ],
  };
  const d = authorize({ action: 'tool:y', principal: { kind: 'stdio', owner: 'a', allow_write: false, allow_approvals: false }, project: null }, rules);
  t.same(d.reasons, ['f']);
});

t.test('action patterns match exactly or by a trailing star', async (t) => {
  t.ok(matchesAction('tool:*', 'tool:shadow_status'));
  t.ok(matchesAction('tool:shadow_memory.*', 'tool:shadow_memory.append'));
  t.notOk(matchesAction('tool:shadow_memory', 'tool:shadow_memory.append'));
  t.notOk(matchesAction('cli:*', 'tool:cli'));
  t.equal(minLevel('elevated', 'workspace'), 'workspace');
  t.equal(minLevel(), 'elevated');
});

t.test('the shipped policy decides the same as an unfrozen copy of it, decision after decision', async () => {
  // A frozen rule set has its rules looked up by action once; a copy that can still change is read in full every time.
  const policy = shippedPolicy();
  const copy = structuredClone(policy.permissions) as Permissions;
  fc.assert(
    fc.property(request, (req) => {
      const a = authorize(req, policy.permissions);
      const b = authorize(req, copy);
      return JSON.stringify(a) === JSON.stringify(b);
    }),
    { numRuns: 2000 },
  );
});

t.test('a rule set changed between two decisions decides the second by its new rules', async (t) => {
  const rules: Permissions = { version: 1, rules: [{ id: 'p', effect: 'permit', description: 'x', actions: ['tool:z'] }] };
  const req: GateRequest = { action: 'tool:z', principal: { kind: 'stdio', owner: 'a', allow_write: false, allow_approvals: false }, project: null };
  t.equal(authorize(req, rules).allow, true);
  rules.rules.push({ id: 'f', effect: 'forbid', description: 'x', actions: ['tool:*'] });
  t.same(authorize(req, rules).reasons, ['f'], 'the forbid added after the first decision applies');
  (rules.rules[1] as { actions: string[] }).actions = ['tool:other'];
  t.same(authorize(req, rules).reasons, ['p'], 'and stops applying once its actions no longer match');
});

t.test("a rule's condition changed between two decisions decides the second by its new tests", async (t) => {
  // A frozen condition has its tests listed once; one that can still change is read afresh at each decision.
  const forbid = { id: 'f', effect: 'forbid' as const, description: 'x', actions: ['tool:z'], when: { 'principal.kind': 'http' } as Record<string, unknown> };
  const rules = { version: 1, rules: [{ id: 'p', effect: 'permit', description: 'x', actions: ['tool:z'] }, forbid] } as Permissions;
  const req: GateRequest = { action: 'tool:z', principal: { kind: 'stdio', owner: 'a', allow_write: false, allow_approvals: false }, project: null };
  t.same(authorize(req, rules).reasons, ['p'], 'the forbid is for http only');
  forbid.when['principal.owner'] = 'a';
  forbid.when['principal.kind'] = 'stdio';
  t.same(authorize(req, rules).reasons, ['f'], 'its new tests apply to the next decision');
});
