// Shared bench helpers: statistics over rounds, an installed copy of the package
// built the way a host gets it (npm pack, then npm install of the tarball), and
// TypeScript benches bundled to run on plain Node.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** min / median / max of per-round values. */
export const spread = (xs) => ({ min: Math.min(...xs), median: median(xs), max: Math.max(...xs) });

/** The order servers run in for round i: alternating, so neither always goes first. */
export const ordered = (entries, i) => (i % 2 ? [...entries].reverse() : entries);

/**
 * Installs the package from its own tarball into dir and returns the installed bin.
 * Dependencies come through npm (cache first); install scripts are skipped and the
 * checkout's compiled better-sqlite3 addon is copied in, because building it again
 * takes minutes and is the same file.
 */
export function installPacked(root, dir) {
  mkdirSync(dir, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['pack', '--pack-destination', dir, '--silent'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  const tgz = readdirSync(dir).find((n) => n.endsWith('.tgz'));
  const app = join(dir, 'host');
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), '{"name":"bench-host","private":true}\n');
  execFileSync(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=dev', '--ignore-scripts', join(dir, tgz)], { cwd: app, stdio: ['ignore', 'ignore', 'inherit'] });
  const addon = join('better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  const target = join(app, 'node_modules', addon);
  if (!existsSync(target)) {
    mkdirSync(join(target, '..'), { recursive: true });
    copyFileSync(join(root, 'node_modules', addon), target);
  }
  return join(app, 'node_modules', 'shadowcode', 'bin', 'shadowcode.js');
}

export const f2 = (x) => x.toFixed(2);
export const fs = (s, f = f2) => `${f(s.median)} (${f(s.min)}–${f(s.max)})`;

/** Bundles a TypeScript bench (bench/NAME.ts) with esbuild so it runs on plain Node, and imports it. */
/** `external`: packages left to Node's own import (playwright-core, which cannot be bundled). */
export async function loadBench(root, name, external = []) {
  const bundle = join(root, 'bench', 'results', `${name}.mjs`);
  await build({
    entryPoints: [join(root, 'bench', `${name}.ts`)],
    outfile: bundle,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['better-sqlite3', ...external],
    define: { __SHADOWCODE_VERSION__: '"bench"' },
    banner: { js: "import { createRequire as __scCreateRequire } from 'node:module'; const require = __scCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return import(pathToFileURL(bundle).href);
}
