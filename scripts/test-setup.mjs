/*
 * What `npm test` does between the build and tap, so that no test process pays for
 * it on its own:
 *
 *   tap's test class built with other plugins than package.json asks for? `tap build`
 *     (scripts/tap-plugins.mjs; `prepare` already did it at npm ci, unless the list changed since)
 *   tap and its plugins ─► one ES module (ts-hooks.mjs hands it to `import 'tap'`)
 *                        ─► one CommonJS module of `t` (ts-require.cjs hands it to `require('tap')`)
 *   every .ts under src/ and test/ ─► the transform caches of both, CommonJS and ESM (test/fixtures/)
 *   every .js under gen/           ─► the CommonJS cache (a test process loads gen/ as CommonJS)
 *
 * Plugins: the suite turns off the ones it does not use (TypeScript through ts-node,
 * module mocks, snapshots, fixtures...); each adds imports or a module-hook chain to
 * every test process.
 *
 * Cache: on a fresh clone every test process would otherwise start esbuild for the
 * files it imports first; here one process transforms them all.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tapBundlePath, transformed } from '../test/fixtures/ts-hooks.mjs';
import { ensureTapBuilt } from './tap-plugins.mjs';

const cjs = createRequire(import.meta.url)('../test/fixtures/ts-require.cjs');

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// Normally done by `prepare` at npm ci; again here for a plugin list changed since.
try {
  await ensureTapBuilt();
} catch (err) {
  console.error(`test-setup: ${err.message}`);
  process.exit(1);
}

// After the build above: each bundle's name includes the built plugin list.
const bundles = [
  // For a test process's ESM (ts-hooks.mjs): everything tap exports.
  { path: tapBundlePath(), format: 'esm', contents: "export * from 'tap';\nexport { default } from 'tap';\n",
    // Some of tap's dependencies are CommonJS and require() Node's own modules.
    banner: "import { createRequire as __tapCreateRequire } from 'node:module';\nconst require = __tapCreateRequire(import.meta.url);" },
  // For a test file run as CommonJS (ts-require.cjs): `t`, which `import t from 'tap'` receives.
  { path: cjs.tapBundlePath(), format: 'cjs', contents: "module.exports = require('tap').t;\n" },
];
for (const { path: bundle, format, contents, banner } of bundles) {
  if (!bundle || existsSync(bundle)) continue;
  const { build } = await import('esbuild');
  mkdirSync(dirname(bundle), { recursive: true });
  const tmp = `${bundle}.${process.pid}.tmp`;
  try {
    await build({
      stdin: { contents, resolveDir: ROOT, loader: 'js' },
      bundle: true,
      platform: 'node',
      format,
      target: 'node20',
      outfile: tmp,
      logLevel: 'warning',
      ...(banner ? { banner: { js: banner } } : {}),
    });
    renameSync(tmp, bundle);
  } finally {
    rmSync(tmp, { force: true });
  }
}
// Bundles for another tap or other plugins.
const current = new Set(bundles.map((b) => b.path));
const dir = bundles[0].path && dirname(bundles[0].path);
if (dir && existsSync(dir)) for (const old of readdirSync(dir)) if (!current.has(join(dir, old))) rmSync(join(dir, old), { force: true });

const sources = ['src', 'test'].flatMap((dir) =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(ROOT, dir, f)),
);
// gen/'s ES modules, which a test process loads as CommonJS too.
const generated = readdirSync(join(ROOT, 'gen'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.js'))
  .map((f) => join(ROOT, 'gen', f));
// Each file as a test process loads it (CommonJS; a file with top-level await cannot be, and
// runs as ESM), and as ESM for the children that import our sources from an ES module.
await Promise.all([
  ...sources.flatMap((path) => [cjs.transformedAsync(path).catch(() => undefined), transformed(path)]),
  ...generated.map((path) => cjs.transformedAsync(path).catch(() => undefined)),
]);
