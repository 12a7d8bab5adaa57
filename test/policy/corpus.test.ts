// The decision corpus: every file in test/fixtures/decisions is a list of
// requests and the decision the shipped policy must reach for each.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { DecisionCase } from '../../gen/types/decision-case.js';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { authorize } from '../../src/policy/authorize.js';
import { explain } from '../../src/policy/gate.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { isValid } from '../../src/schema/validate.js';
import { ROOT } from '../fixtures/env.js';

const dir = join(ROOT, 'test', 'fixtures', 'decisions');
const policy = shippedPolicy();
let total = 0;

for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const cases = JSON.parse(readFileSync(join(dir, file), 'utf8')) as DecisionCase[];
  t.test(file, async (t) => {
    for (const c of cases) {
      total++;
      t.ok(isValid('decision-case', c), `${c.description}: the case itself matches decision-case.schema.json`);
      if (c.expect.invalid) {
        t.notOk(isValid('gate-request', c.request), `${c.description}: refused by the request schema`);
        t.throws(() => explain(policy, c.request as unknown as GateRequest), { code: 'SC_POLICY_REQUEST_INVALID' }, c.description);
        continue;
      }
      t.ok(isValid('gate-request', c.request), `${c.description}: request is well-formed`);
      const d = authorize(c.request as unknown as GateRequest, policy.permissions);
      t.equal(d.allow, c.expect.allow, `${c.description}: ${c.expect.allow ? 'allow' : 'deny'}`);
      if (c.expect.reasons) t.same([...d.reasons].sort(), [...c.expect.reasons].sort(), `${c.description}: reasons`);
      if (c.expect.ceiling) t.equal(d.ceiling, c.expect.ceiling, `${c.description}: ceiling`);
      // Every rule named as a reason exists in the policy, or is the default.
      for (const r of d.reasons) t.ok(r === 'default-deny' || policy.permissions.rules.some((x) => x.id === r), `${r} is a real rule`);
    }
  });
}

t.teardown(() => {
  if (total < 40) throw new Error(`decision corpus has only ${total} cases; it must keep at least 40`);
});

t.test('every forbid rule in the shipped policy is exercised by some corpus case', async (t) => {
  const seen = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    for (const c of JSON.parse(readFileSync(join(dir, file), 'utf8')) as DecisionCase[]) for (const r of c.expect.reasons ?? []) seen.add(r);
  }
  for (const rule of policy.permissions.rules) t.ok(seen.has(rule.id), `rule ${rule.id} appears in a case's expected reasons`);
});
