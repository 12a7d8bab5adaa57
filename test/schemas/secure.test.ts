// Every schema is closed and bounded: objects with properties refuse unknown
// keys, every string has maxLength (or is an enum/const), every array maxItems,
// every free-form object maxProperties. A hostile input cannot be unbounded.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ROOT } from '../fixtures/env.js';

const dir = join(ROOT, 'schemas');
function walk(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.schema.json') ? [join(d, e.name)] : []));
}

function problems(node: unknown, path: string, out: string[]): void {
  if (Array.isArray(node)) return node.forEach((n, i) => problems(n, `${path}/${i}`, out));
  if (!node || typeof node !== 'object') return;
  const s = node as Record<string, unknown>;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  const bounded = 'enum' in s || 'const' in s;
  if (types.includes('string') && !bounded && typeof s.maxLength !== 'number') out.push(`${path}: string without maxLength`);
  if (types.includes('array') && typeof s.maxItems !== 'number') out.push(`${path}: array without maxItems`);
  if (types.includes('object')) {
    if (s.properties && s.additionalProperties !== false) out.push(`${path}: object with properties must set additionalProperties: false`);
    if (!s.properties && typeof s.maxProperties !== 'number') out.push(`${path}: free-form object without maxProperties`);
  }
  for (const [k, v] of Object.entries(s)) if (k !== 'enum' && k !== 'const' && k !== 'examples') problems(v, `${path}/${k}`, out);
}

for (const file of walk(dir)) {
  const rel = relative(ROOT, file);
  t.test(`${rel} is closed and bounded`, async (t) => {
    const schema = JSON.parse(readFileSync(file, 'utf8'));
    t.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema', 'draft 2020-12');
    t.match(schema.$id, /^https:\/\/shadowcode\.dev\/schemas\//, 'has an $id');
    const out: string[] = [];
    problems(schema, '', out);
    t.same(out, [], 'no unbounded or open shapes');
  });
}
