// Which npm packages the bundles in dist/ contain, found by asking esbuild for
// the inputs of the same entry points scripts/build.mjs builds, with only the
// runtime dependencies (package.json "dependencies") left external.
//
//   scripts/build.mjs entry points ─► esbuild metafile (no output) ─► node_modules/<pkg>/… inputs
//                                  ─► [{ name, version, dir }] of every bundled package
//
// They ship inside dist/, so their licence texts ship in licenses/ although they
// are development dependencies (scripts/licenses.mjs, test/licenses.test.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;

/** The entry points named in scripts/build.mjs, so this cannot drift from what is built. */
export function entryPoints() {
  const text = readFileSync(join(root, 'scripts', 'build.mjs'), 'utf8');
  const found = [...text.matchAll(/'(src\/[^']+\.ts)'/g)].map((m) => m[1]);
  if (!found.length) throw new Error('no src/*.ts entry points found in scripts/build.mjs');
  return [...new Set(found)];
}

export async function bundledPackages() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const r = await build({
    absWorkingDir: root,
    entryPoints: entryPoints(),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    external: Object.keys(pkg.dependencies ?? {}),
    metafile: true,
    write: false,
    outdir: 'out',
    logLevel: 'error',
  });
  const dirs = new Set();
  for (const input of Object.keys(r.metafile.inputs)) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) dirs.add(m[1]);
  }
  return [...dirs]
    .map((dir) => {
      const p = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
      return { name: p.name, version: p.version, dir, license: p.license ?? null };
    })
    .sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const p of await bundledPackages()) console.log(`${p.name}@${p.version}  ${p.dir}`);
}
