// Bundles shadowcode into dist/ with esbuild.
//
//   src/cli/main.ts ─► dist/cli.cjs      one CommonJS file: the boot module (src/boot.ts) compiles
//                                        it with a V8 code cache, which needs a single script; written
//                                        inside the module wrapper, as dist/vendor.cjs is, so boot compiles
//                                        the text as read (neither is for Node's own require)
//   src/vendor.ts   ─► dist/vendor.cjs   the MCP SDKs and yaml, left out of dist/cli.cjs and compiled
//                                        (with their own code cache) only when first required
//   src/boot.ts     ─► dist/boot.cjs     tiny; stamped with both bundles' hashes (the cache keys) and
//                                        the packages dist/vendor.cjs serves
//   src/lib/index.ts ─► dist/lib.cjs     the library (require), and dist/lib.mjs, its ESM face (import):
//                                        one implementation, so a host never holds two copies of the state
//   child programs  ─► dist/supervisor.cjs, dist/sqlite-child.cjs, dist/net-bridge.cjs (CommonJS: one starts for every job and
//                                        every query, and Node starts a CommonJS program ~10 ms sooner),
//                      dist/mcp-relay.js (ESM; coding CLIs' configs name this path), all started as processes
//   src/console/page ─► dist/console/{index.html, app.js, style.css, icon.svg}: the console's page, for the browser
//
//   src/telemetry/otel-packages.ts ─► dist/otel.cjs   the OpenTelemetry packages, required only when an export starts
//
// better-sqlite3 is a native addon: its addon always stays in the package, loaded only when a
// database first opens; dist/cli.cjs carries the package's JavaScript (src/store/sqlite-driver.ts). The OpenTelemetry packages go into a file of their own,
// dist/otel.cjs, never into cli.cjs or lib.cjs: the one import of that module
// (src/telemetry/encode.ts) becomes a require of ./otel.cjs, and encode.ts is reached only
// through sdk.ts's dynamic import, so they load only when an export starts.
//
// A build that would write what dist/ already holds is skipped (`npm test` builds first, and
// `npm ci` has just built): see build-stamp.mjs. `--force` builds regardless.
import { createHash } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { join } from 'node:path';
import { build as esbuild } from 'esbuild';
import { clearStamp, isCurrent, writeStamp } from './build-stamp.mjs';

// Not process.exit() when dist/ is current: prepare.mjs imports this and goes on with the declarations.
if (!process.argv.includes('--force') && isCurrent()) console.log('dist/ is up to date (node scripts/build.mjs --force rebuilds it)');
else await buildDist();

async function buildDist() {
  clearStamp();
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });

  // Every esbuild run reports what it read, and the stamp records those files.
  const inputs = new Set();
  async function build(options) {
    const result = await esbuild({ ...options, metafile: true });
    for (const input of Object.keys(result.metafile.inputs)) inputs.add(input);
    return result;
  }

  // The shipped policy files that pass their schema, by the sha256 of their bytes: the bundle
  // (src/policy/load.ts) skips checking those exact bytes again at every start. A file that fails
  // is left out, so a start reports it as it would without this.
  const validators = await import('../gen/validators/index.js');
  const verifiedPolicy = {};
  for (const file of readdirSync(new URL('../policy/', import.meta.url)).filter((f) => f.endsWith('.json')).sort()) {
    const validate = validators[`validate${file.slice(0, -'.json'.length).replace(/(^|-)([a-z])/g, (_, _dash, c) => c.toUpperCase())}`];
    const bytes = readFileSync(new URL(`../policy/${file}`, import.meta.url));
    if (typeof validate === 'function' && validate(JSON.parse(bytes.toString('utf8')))) verifiedPolicy[file] = createHash('sha256').update(bytes).digest('hex');
  }

  // encode.ts's import of the packages, in the bundles that carry it: a require of dist/otel.cjs, beside them.
  const otelOutside = {
    name: 'otel-outside',
    setup(b) {
      b.onResolve({ filter: /\/otel-packages\.js$/ }, (args) => (args.importer.endsWith(join('src', 'telemetry', 'encode.ts')) ? { path: './otel.cjs', external: true } : undefined));
    },
  };
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    external: ['better-sqlite3', '@opentelemetry/*'],
    define: { __SHADOWCODE_VERSION__: JSON.stringify(pkg.version), __SHADOWCODE_VERIFIED_POLICY__: JSON.stringify(verifiedPolicy) },
    legalComments: 'none',
    sourcemap: false,
    logLevel: 'warning',
    plugins: [otelOutside],
  };

  await build({ ...common, entryPoints: { 'sqlite-child': 'src/engine/sqlite-child.ts', supervisor: 'src/engine/spawn/supervisor.ts', 'net-bridge': 'src/engine/spawn/net-bridge.ts' }, outdir: 'dist', outExtension: { '.js': '.cjs' }, format: 'cjs' });
  await build({
    ...common,
    entryPoints: { 'mcp-relay': 'src/agent/runners/mcp-relay.ts' },
    outdir: 'dist',
    format: 'esm',
    // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
    banner: { js: "import { createRequire as __scCreateRequire } from 'node:module'; const require = __scCreateRequire(import.meta.url);" },
  });

  // The console's page runs in the browser: no Node built-ins, served from the package (no CDN).
  await build({ entryPoints: { app: 'src/console/page/app.ts' }, outdir: 'dist/console', bundle: true, platform: 'browser', format: 'iife', target: 'es2022', minify: true, legalComments: 'none', logLevel: 'warning' });
  for (const f of ['index.html', 'style.css', 'icon.svg']) copyFileSync(new URL(`../src/console/page/${f}`, import.meta.url), new URL(`../dist/console/${f}`, import.meta.url));

  // The packages dist/cli.cjs leaves to dist/vendor.cjs: the keys of src/vendor.ts's VENDOR.
  const vendorIds = [...readFileSync(new URL('../src/vendor.ts', import.meta.url), 'utf8').matchAll(/^\s+'?([@\w/.-]+)'?: \(\) => require\('([^']+)'\)/gm)].map((m) => {
    if (m[1] !== m[2]) throw new Error(`src/vendor.ts: ${m[1]} must require itself, not ${m[2]}`);
    return m[1];
  });
  // Required, these packages still resolve to their ES module builds: the same code the CLI bundle held before.
  const esmBuilds = {
    name: 'esm-builds',
    setup(b) {
      b.onResolve({ filter: /^@modelcontextprotocol\// }, (args) => (args.kind === 'require-call' ? b.resolve(args.path, { kind: 'import-statement', resolveDir: args.resolveDir }) : undefined));
    },
  };
  const [wrapHead, wrapTail] = Module.wrap('\0').split('\0');
  const script = {
    format: 'cjs',
    // Every launch holds the source (twice, with the module wrapper) and parses its top level:
    // whitespace and syntax are minified; identifiers are kept, so stack traces keep their names.
    minifyWhitespace: true,
    minifySyntax: true,
    // boot.ts reads the bundles as Latin-1, which is only right for ASCII: anything else is escaped.
    charset: 'ascii',
    // The source uses import.meta.url (to find the package root); in CommonJS it comes from __filename.
    define: { ...common.define, 'import.meta.url': '__scImportMetaUrl' },
    // Written already inside CommonJS's module wrapper (exactly what Module.wrap adds), so boot.ts
    // compiles the file's text as it is read: wrapping it at every start made V8 copy the whole
    // bundle into one more flat string before compiling, ~10 ms of a start on a small machine.
    banner: { js: `${wrapHead}const __scImportMetaUrl = require('node:url').pathToFileURL(__filename).href;` },
    footer: { js: wrapTail },
  };
  await build({ ...common, ...script, entryPoints: { vendor: 'src/vendor.ts' }, outfile: 'dist/vendor.cjs', plugins: [otelOutside, esmBuilds] });
  await build({
    ...common,
    ...script,
    entryPoints: { cli: 'src/cli/main.ts' },
    outfile: 'dist/cli.cjs',
    // better-sqlite3's JavaScript is bundled here (compiled with the CLI's code cache at the first
    // open, src/store/sqlite-driver.ts); its native addon stays in the package, loaded by path.
    external: [...common.external.filter((e) => e !== 'better-sqlite3'), ...vendorIds],
  });
  for (const f of ['cli.cjs', 'vendor.cjs']) if (readFileSync(new URL(`../dist/${f}`, import.meta.url)).some((b) => b > 0x7f)) throw new Error(`dist/${f} is not ASCII`);
  // Whatever dist/cli.cjs requires at run time is a built-in, one of the package's own runtime
  // dependencies (the SQLite driver), served by dist/vendor.cjs, or dist/otel.cjs (OpenTelemetry, loaded only when configured).
  const { builtinModules } = await import('node:module');
  const runtime = Object.keys(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).dependencies ?? {});
  const cliText = readFileSync(new URL('../dist/cli.cjs', import.meta.url), 'latin1');
  // (A require( right after a quote or backtick is text, such as ajv keeps for its standalone output.)
  for (const [, id] of cliText.matchAll(/(?<![`'"\w.$])require\("([^"]+)"\)/g)) {
    const builtin = id.startsWith('node:') || builtinModules.includes(id);
    if (!builtin && !runtime.includes(id) && !vendorIds.includes(id) && id !== './otel.cjs') throw new Error(`dist/cli.cjs requires ${id}, which neither it, dist/vendor.cjs nor a runtime dependency holds`);
  }
  // A dynamic import() of a package would bypass boot's require and look for it in node_modules: import a module of ours that imports it.
  for (const [, id] of cliText.matchAll(/(?<![`'"\w.$])import\("([^"]+)"\)/g)) {
    if (!id.startsWith('node:')) throw new Error(`dist/cli.cjs imports ${id} at run time; only built-ins may be imported so`);
  }

  // The OpenTelemetry packages, on their own: required (by encode.ts) only when an export starts.
  await build({ ...common, external: [], plugins: [], entryPoints: { otel: 'src/telemetry/otel-packages.ts' }, outfile: 'dist/otel.cjs', format: 'cjs', minifyWhitespace: true, minifySyntax: true });

  // The library: the same code as the CLI, bundled on its own so that a host loads no command parser.
  await build({
    ...common,
    entryPoints: { lib: 'src/lib/index.ts' },
    outfile: 'dist/lib.cjs',
    format: 'cjs',
    minifyWhitespace: true,
    minifySyntax: true,
    define: { ...common.define, 'import.meta.url': '__scImportMetaUrl' },
    banner: { js: "const __scImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  const { createRequire } = await import('node:module');
  const names = Object.keys(createRequire(import.meta.url)('../dist/lib.cjs')).sort();
  writeFileSync(
    new URL('../dist/lib.mjs', import.meta.url),
    `// The ESM face of dist/lib.cjs: the same module instance, so both forms share one state.\nimport lib from './lib.cjs';\nexport const { ${names.join(', ')} } = lib;\nexport default lib;\n`,
  );

  for (const f of ['cli.cjs', 'vendor.cjs', 'lib.cjs', 'mcp-relay.js']) {
    if (/require\("@opentelemetry\/|from ?"@opentelemetry\//.test(readFileSync(new URL(`../dist/${f}`, import.meta.url), 'utf8'))) throw new Error(`dist/${f} requires an OpenTelemetry package: import them only through src/telemetry/otel-packages.ts`);
  }

  const hashOf = (f) => createHash('sha256').update(readFileSync(new URL(`../dist/${f}`, import.meta.url))).digest('hex').slice(0, 16);
  await build({
    ...common,
    entryPoints: { boot: 'src/boot.ts' },
    outfile: 'dist/boot.cjs',
    format: 'cjs',
    define: { __SHADOWCODE_BUNDLE_HASH__: JSON.stringify(hashOf('cli.cjs')), __SHADOWCODE_VENDOR__: JSON.stringify({ hash: hashOf('vendor.cjs'), ids: vendorIds }) },
  });

  writeStamp([...inputs]);
}
