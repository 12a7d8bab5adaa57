// The project's private package caches (src/engine/spawn/caches.ts) as the host fills them: a seeded
// cache (cargo's registry) gets what it lacks of the user's, and what a sandboxed command left
// in the private side (a link where a folder goes) is never written through.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cachePlan, cacheRoot } from '../../../src/engine/spawn/caches.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { SHARED_TMP } from '../../fixtures/env.js';

const policy = shippedPolicy();

function world(t: any) {
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-caches-')));
  t.teardown(() => import('node:fs').then((fs) => fs.rmSync(root, { recursive: true, force: true })));
  const home = join(root, 'home');
  const project = join(root, 'project');
  const outside = join(root, 'outside');
  for (const d of [home, project, outside, join(home, '.cargo', 'registry', 'cache', 'reg'), join(home, '.cargo', 'registry', 'index')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, '.cargo', 'registry', 'cache', 'reg', 'a-1.0.crate'), 'a');
  const env = { HOME: home, PATH: '/usr/bin:/bin' };
  const plan = () => cachePlan(project, env, policy.sandbox, policy.limits.sandbox.cache_seed_entries, []);
  return { home, project, outside, env, plan, priv: join(cacheRoot(project, env) as string, 'cargo-registry') };
}

t.test("the user's cargo registry fills the project's private one with what it lacks", async (t) => {
  const w = world(t);
  const p = w.plan();
  t.ok(p.binds.some((b) => b.name === 'cargo-registry' && b.at === join(w.home, '.cargo', 'registry') && b.private === w.priv), 'bound at the registry path, kept privately');
  t.ok(existsSync(join(w.priv, 'cache', 'reg', 'a-1.0.crate')), 'the crate the user had is there');
});

t.test('a link the sandbox left where a folder of the private cache goes is never written through', async (t) => {
  const w = world(t);
  w.plan();
  // Inside the sandbox the private registry is writable: swap a folder for a link to somewhere else.
  renameSync(join(w.priv, 'cache', 'reg'), join(w.priv, 'cache', 'reg.old'));
  symlinkSync(w.outside, join(w.priv, 'cache', 'reg'));
  // The user's cache changes, so the next start fills again.
  writeFileSync(join(w.home, '.cargo', 'registry', 'cache', 'reg', 'b-2.0.crate'), 'b');
  mkdirSync(join(w.home, '.cargo', 'registry', 'cache', 'other'));
  writeFileSync(join(w.home, '.cargo', 'registry', 'cache', 'other', 'c-3.0.crate'), 'c');
  w.plan();
  t.same(readdirSync(w.outside), [], 'nothing was copied through the link');
  t.ok(existsSync(join(w.priv, 'cache', 'other', 'c-3.0.crate')), 'the rest is still filled');
});
