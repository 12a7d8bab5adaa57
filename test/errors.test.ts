import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ERRORS, ScError } from '../src/errors.js';
import { isValid } from '../src/schema/validate.js';
import { ROOT } from './fixtures/env.js';

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

t.test('every error code is used somewhere in src/ besides the registry', async (t) => {
  const text = walk(join(ROOT, 'src'))
    .filter((f) => !f.endsWith('errors.ts'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  for (const code of Object.keys(ERRORS)) t.ok(text.includes(code), `${code} is used`);
});

t.test('every error code is documented in the docs/errors.md table, and no documented code is stale', async (t) => {
  const readme = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const documented = new Set([...readme.matchAll(/^\| `(SC_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]));
  for (const code of Object.keys(ERRORS)) t.ok(documented.has(code), `${code} has a row in docs/errors.md`);
  for (const code of documented) t.ok(code! in ERRORS, `${code} in docs/errors.md exists in src/errors.ts`);
});

t.test('an error serialises to the --json error shape', async (t) => {
  const e = new ScError('SC_POLICY_DENIED', 'no', { decision_id: 'd1', reasons: ['x'] });
  t.ok(isValid('error', e.toJSON()));
  t.same(e.toJSON(), { error: { code: 'SC_POLICY_DENIED', message: 'no', decision_id: 'd1', detail: { reasons: ['x'] } } });
  t.equal(e.exitCode, 3);
  for (const [code, def] of Object.entries(ERRORS)) t.ok([1, 2, 3, 4].includes(def.exit), `${code} exits non-zero`);
});
