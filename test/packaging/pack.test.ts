/*
 * The package as a user gets it: `npm pack` of this checkout, installed into a
 * temporary prefix, then the installed `shadowcode` bin run for real. The pack and the
 * install are fixtures/install.ts's installedPackage, shared with the library test.
 *
 *   npm pack --ignore-scripts (dist/ from npm test's build) ─► file list and package.json checks
 *      (the checkout's own list, and the tarball: those files plus the emitted declarations)
 *   ─► the shipped prepare script, run in the unpacked package, leaves it as it is
 *   ─► temp prefix: package.json + a lockfile pinning the tarball and our runtime
 *      dependencies by integrity ─► npm ci --prefer-offline (the lockfile's packages are in
 *      the npm cache after the checkout's own npm ci; CI may also fetch them)
 *   ─► better-sqlite3's native binary copied from the checkout's build (install scripts are
 *      off: they would download or compile, which neither this machine nor CI should need)
 *   ─► <prefix>/node_modules/.bin/shadowcode --version, and a stdio tools/list with the v1 SDK
 *
 * It never looks at dist/'s layout: whatever the bundle is, the installed bin must run.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT, sandbox } from '../fixtures/env.js';
import { installedPackage, npm, run } from '../fixtures/install.js';
import { otlpReceiver } from '../fixtures/otlp/receiver.js';
import { v1 } from '../fixtures/sdk-v1.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

const work = mkdtempSync(join(tmpdir(), 'sc-pack-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

t.test('packs, installs into a temporary prefix, and the installed bin serves tools/list', async (t) => {
  t.ok(existsSync(join(ROOT, 'dist')), 'dist/ is built (npm test builds before the suite)');
  const { tgz, files, checkout, install: installed, prefix } = await installedPackage();
  const top = [...new Set(checkout.map((f) => f.split('/')[0]))].sort();
  t.same(top, ['CHANGELOG.md', 'LICENSE', 'README.md', 'bin', 'dist', 'docs', 'licenses', 'package.json', 'policy', 'schemas'], 'ships only what runs, its licences and its docs');
  t.notOk([...checkout, ...files].some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript source (gen/, src/) is shipped, only declarations');
  const notTypes = (list: string[]) => list.filter((f) => !f.startsWith('dist/types/')).sort();
  t.same(notTypes(files), notTypes(checkout), 'the tarball under test holds exactly the checkout\'s package files');
  t.ok(files.some((f) => f.startsWith('dist/types/')) && files.every((f) => checkout.includes(f) || /^dist\/types\/.*\.d\.ts$/.test(f)), 'plus the declarations prepare emits, and nothing else');
  t.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License\n/);

  // What npm reads from the tarball: no install hook, and only the runtime dependency the
  // bundle leaves external: the native SQLite binding. The OpenTelemetry packages are bundled
  // too, into dist/otel.cjs, which loads only when telemetry is configured.
  const shipped = JSON.parse((await run('tar', ['-xzOf', tgz, 'package/package.json'])).stdout) as { scripts?: Record<string, string>; dependencies: Record<string, string> };
  for (const hook of ['preinstall', 'install', 'postinstall']) t.notOk(shipped.scripts?.[hook], `no ${hook} script`);
  t.same(Object.keys(shipped.dependencies), ['better-sqlite3'], 'the bundled packages, OpenTelemetry\'s included, are not runtime dependencies');

  // `prepare` builds dist/ on `npm ci` in a checkout. npm runs it for a checkout, a folder or
  // a git install, never for a tarball; should anything run it in the unpacked package anyway,
  // where scripts/ and src/ are not shipped, it must succeed and leave the shipped bundle alone.
  t.ok(shipped.scripts?.prepare, 'a prepare script builds dist/ in a checkout');
  const unpacked = join(work, 'unpacked');
  mkdirSync(unpacked);
  await run('tar', ['-xzf', tgz, '-C', unpacked]);
  const pkgDir = join(unpacked, 'package');
  const bundleHash = () => createHash('sha256').update(readFileSync(join(pkgDir, 'dist', 'cli.cjs'))).digest('hex');
  const before = bundleHash();
  await npm(['run', 'prepare'], pkgDir);
  t.equal(bundleHash(), before, 'prepare in the unpacked package does nothing');
  t.notOk(existsSync(join(pkgDir, 'scripts')) || existsSync(join(pkgDir, 'src')), 'no build inputs are shipped');

  t.notMatch(installed.stderr, /npm warn/i, 'npm installs it without a warning');
  const modules = readdirSync(join(prefix, 'node_modules'));
  for (const bundled of ['@modelcontextprotocol', 'zod', 'ajv', 'yaml']) t.notOk(modules.includes(bundled), `${bundled} is not installed: it is in the bundle`);

  const bin = join(prefix, 'node_modules', '.bin', 'shadowcode');
  const sb = sandbox('sc-pack');
  const env = { ...sb.env } as Record<string, string>;
  t.equal((await run(bin, ['--version'], { env })).stdout, `${pkg.version}\n`);

  const { Client, StdioClientTransport } = v1();
  // With telemetry configured, so that the installed OpenTelemetry packages load from the prefix too.
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const transport = new StdioClientTransport({ command: bin, args: ['--project', sb.project, 'mcp', 'serve'], env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }, stderr: 'pipe' });
  const client = new Client({ name: 'pack-check', version: '1.0.0' });
  t.teardown(() => client.close());
  await client.connect(transport);
  const { tools } = await client.listTools();
  t.ok(tools.length >= 16, `the installed server lists its tools (${tools.length})`);
  t.ok(tools.some((x) => x.name === 'shadow_status'));
  const status = await client.callTool({ name: 'shadow_status', arguments: {} });
  t.notOk(status.isError, 'a call that opens the database works: the native binding loads');
  await client.close();
  await rx.until(() => rx.spans.some((s) => s.name === 'tools/call shadow_status'), 'the call span from the installed package');
  t.ok(rx.requests.every((r) => r.encoding === 'protobuf'), 'the installed exporters send OTLP/protobuf by default');
});
