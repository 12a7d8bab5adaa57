// Bundles the CLI into dist/ with esbuild. One small entry chunk is loaded at
// start-up; each command, and the MCP server, are split into chunks loaded only
// when used. better-sqlite3 stays external (it is a native addon).
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli/main.ts', 'sqlite-child': 'src/engine/sqlite-child.ts', 'job-runner': 'src/engine/runner-child.ts', 'runner-supervisor': 'src/agent/runners/supervisor.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3'],
  define: { __SHADOWCODE_VERSION__: JSON.stringify(pkg.version) },
  // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
  banner: { js: "import { createRequire as __scCreateRequire } from 'node:module'; const require = __scCreateRequire(import.meta.url);" },
  chunkNames: 'chunks/[name]-[hash]',
  legalComments: 'none',
  sourcemap: false,
  logLevel: 'warning',
});
