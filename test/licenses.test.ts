import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from './fixtures/env.js';

interface Manifest {
  packages: Array<{ name: string; version: string; license: string | null; files: Array<{ path: string; sha256: string }> }>;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'licenses', 'manifest.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string; dev?: boolean }> };

// What dist/ bundles, asked of esbuild once for this file (a whole bundle of the entry points).
let bundled: Promise<Array<{ name: string; version: string }>> | undefined;
const bundledOnce = () =>
  (bundled ??= import(join(ROOT, 'scripts', 'bundled-packages.mjs')).then((m: { bundledPackages: () => Promise<Array<{ name: string; version: string }>> }) => m.bundledPackages()));

t.test('every runtime dependency in the lockfile has its licence text in licenses/', async (t) => {
  for (const [path, meta] of Object.entries(lock.packages)) {
    if (!path || meta.dev) continue;
    const name = path.replace(/^.*node_modules\//, '');
    const entry = manifest.packages.find((p) => p.name === name && p.version === meta.version);
    t.ok(entry, `${name}@${meta.version} is in licenses/manifest.json (run npm run licenses)`);
    t.ok(entry && entry.files.length > 0, `${name}@${meta.version} has a licence file`);
  }
});

t.test('every package bundled into dist/ has its licence text in licenses/, though it is a development dependency', async (t) => {
  const bundled = await bundledOnce();
  t.ok(bundled.some((p) => p.name === '@modelcontextprotocol/server'), 'the SDK is bundled');
  for (const b of bundled) {
    const entry = manifest.packages.find((p) => p.name === b.name && p.version === b.version);
    t.ok(entry && entry.files.length > 0, `${b.name}@${b.version} is bundled and has a licence file (run npm run licenses)`);
  }
});

t.test('licence files match their recorded digests', async (t) => {
  for (const p of manifest.packages) {
    for (const f of p.files) {
      const file = join(ROOT, 'licenses', f.path);
      t.ok(existsSync(file), `${f.path} exists`);
      if (existsSync(file)) t.equal(createHash('sha256').update(readFileSync(file)).digest('hex'), f.sha256, `${f.path} digest`);
    }
  }
});

t.test('the manifest names no package that is no longer shipped (a runtime dependency or bundled)', async (t) => {
  const runtime = new Set(Object.entries(lock.packages).filter(([k, v]) => k && !v.dev).map(([k, v]) => `${k.replace(/^.*node_modules\//, '')}@${v.version}`));
  for (const b of await bundledOnce()) runtime.add(`${b.name}@${b.version}`);
  for (const p of manifest.packages) t.ok(runtime.has(`${p.name}@${p.version}`), `${p.name}@${p.version} is still shipped`);
});
