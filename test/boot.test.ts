// The boot module: the built CLI keeps a V8 code cache in the per-user cache
// directory, never beside the package, and a cache that is missing, damaged or
// unwritable only means a normal compile. The SDKs' bundle (dist/vendor.cjs) is
// compiled the same way, and only when the CLI first uses one of its packages.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
import { startCli } from './fixtures/cli-run.js';
import { ROOT, sandbox, spawnCli, until } from './fixtures/env.js';
import { INIT } from './fixtures/mcp.js';

const cacheFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.v8')) : []);

t.test('writes the code cache under XDG_CACHE_HOME, owner-only, and not in the package', async (t) => {
  const sb = sandbox('sc-boot');
  const xdg = join(sb.root, 'xdg');
  const before = readdirSync(join(ROOT, 'dist')).sort();
  const r = await spawnCli(sb, ['--version'], '', { XDG_CACHE_HOME: xdg });
  t.equal(r.code, 0, r.stderr);
  const dir = join(xdg, 'shadowcode');
  const files = cacheFiles(dir);
  t.equal(files.length, 1, 'one cache file');
  t.match(files[0], new RegExp(`^cli-[0-9a-f]{16}-${process.version.replace(/\./g, '\\.')}-${process.arch}\\.v8$`), 'keyed by bundle hash, node version and arch');
  t.equal(statSync(dir).mode & 0o777, 0o700);
  t.equal(statSync(join(dir, files[0] as string)).mode & 0o777, 0o600);
  t.same(readdirSync(join(ROOT, 'dist')).sort(), before, 'nothing is written into dist/');
});

t.test('falls back to ~/.cache/shadowcode without XDG_CACHE_HOME', async (t) => {
  const sb = sandbox('sc-boot');
  const r = await spawnCli(sb, ['--version'], '', { XDG_CACHE_HOME: undefined });
  t.equal(r.code, 0, r.stderr);
  t.equal(cacheFiles(join(sb.root, '.cache', 'shadowcode')).length, 1);
});

t.test('runs the same with a cache as without, and replaces a damaged cache', async (t) => {
  const sb = sandbox('sc-boot');
  const env = { XDG_CACHE_HOME: join(sb.root, 'xdg') };
  const first = await spawnCli(sb, ['status', '--json'], '', env);
  const dir = join(sb.root, 'xdg', 'shadowcode');
  const file = join(dir, cacheFiles(dir)[0] as string);
  const second = await spawnCli(sb, ['status', '--json'], '', env);
  t.equal(second.code, first.code);
  t.same(JSON.parse(second.stdout), JSON.parse(first.stdout), 'same answer from the cached compile');
  // A file too short for the header, and one cut short of the length its header names (another
  // short file, such as a few bytes of garbage, takes the same path as the empty one).
  for (const junk of [Buffer.concat([readFileSync(file).subarray(0, 200)]), Buffer.alloc(0)]) {
    writeFileSync(file, junk);
    const r = await spawnCli(sb, ['status', '--json'], '', env);
    t.equal(r.code, first.code, 'a damaged cache is ignored');
    t.same(JSON.parse(r.stdout), JSON.parse(first.stdout));
    t.ok(readFileSync(file).length > 1000, 'and rewritten');
  }
});

t.test('the next start accepts the caches a server saved: they are used, not compiled and written again', async (t) => {
  // `mcp serve` loads search_text, which sets a V8 flag; V8 refuses a cache made under other flags.
  const sb = sandbox('sc-boot');
  const env = { XDG_CACHE_HOME: join(sb.root, 'xdg') };
  const dir = join(sb.root, 'xdg', 'shadowcode');
  // A session that calls a tool loads the SDK's bundle (dist/vendor.cjs) as well as the CLI's.
  const session = `${[INIT, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'shadow_status', arguments: {} } }].map((m) => JSON.stringify(m)).join('\n')}\n`;
  // The first server stays up until both caches are warm (flag 1 in the header): after that a start
  // rewrites a file only when V8 refuses it, never to warm it up, however slow the machine.
  const first = startCli({ ...sb, env: { ...sb.env, ...env } }, ['mcp', 'serve']);
  first.child.stdin.write(session);
  const warm = (name: string) => cacheFiles(dir).some((n) => n.startsWith(`${name}-`) && (readFileSync(join(dir, n)).readUInt32LE(8) & 1) === 1);
  await until(() => warm('cli') && warm('vendor'), 20000);
  first.child.stdin.end();
  t.equal(await first.exit, 0, first.err());
  t.match(first.out(), /"id":2/, 'the call was answered');
  const files = cacheFiles(dir).sort();
  t.same(files.map((n) => n.split('-')[0]), ['cli', 'vendor'], 'one cache per bundle');
  const saved = files.map((n) => statSync(join(dir, n)));
  for (const [argv, input] of [[['--project', sb.project, 'mcp', 'serve'], session], [['--version'], '']] as const) {
    const r = await spawnCli(sb, [...argv], input, env);
    t.equal(r.code, 0, r.stderr);
    const now = files.map((n) => statSync(join(dir, n)));
    t.same(now.map((s) => [s.ino, s.mtimeMs]), saved.map((s) => [s.ino, s.mtimeMs]), `${argv.at(-1)}: the cache files are the ones the first start wrote`);
  }
});

t.test('the bundle\'s require loads a lazy built-in or a vendored package at its first use, once, as itself', async (t) => {
  const { bundleRequire } = await import('../src/boot.js');
  const real = createRequire(import.meta.url);
  let loads = 0;
  const pkg = { value: 42, Klass: class Klass {} };
  const req = bundleRequire(real, { ids: ['some-package'], load: (id) => (loads++, id === 'some-package' ? pkg : {}) });
  const m = req('some-package') as typeof pkg;
  t.equal(loads, 0, 'requiring it does not load it');
  t.equal(req('some-package'), m, 'every require gets the same module');
  t.equal(m.value, 42, 'a member is the package\'s');
  t.ok(new m.Klass() instanceof pkg.Klass, 'a class is the package\'s class');
  t.same(Object.keys(m), ['value', 'Klass'], 'its keys are the package\'s');
  t.equal(loads, 1, 'loaded once, at the first use');
  const cp = req('node:child_process') as typeof import('node:child_process');
  t.equal(cp.spawnSync(process.execPath, ['-e', 'process.stdout.write("ran")']).stdout.toString(), 'ran', 'a lazy built-in works as itself');
  t.equal(Object.getPrototypeOf(cp), Object.getPrototypeOf(real('node:child_process')));
  t.equal(req('node:path'), real('node:path'), 'other built-ins are the real modules');
});

t.test('runs when the cache directory cannot be written', async (t) => {
  const sb = sandbox('sc-boot');
  const xdg = join(sb.root, 'xdg');
  mkdirSync(join(xdg, 'shadowcode'), { recursive: true });
  chmodSync(join(xdg, 'shadowcode'), 0o500);
  t.teardown(() => chmodSync(join(xdg, 'shadowcode'), 0o700));
  const r = await spawnCli(sb, ['--version'], '', { XDG_CACHE_HOME: xdg });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  t.equal(r.stderr, '');
  // Writing a file where the directory should be leaves nothing to create the cache in, either.
  const blocked = join(sb.root, 'blocked');
  writeFileSync(blocked, 'x');
  const r2 = await spawnCli(sb, ['--version'], '', { XDG_CACHE_HOME: blocked });
  t.equal(r2.code, 0, r2.stderr);
  t.equal(r2.stderr, '');
  // A cache directory below /proc, where Node's own recursive mkdir never returns: the command still ends.
  const r3 = await spawnCli(sb, ['--version'], '', { XDG_CACHE_HOME: `/proc/${process.pid}/sc-cache` });
  t.equal(r3.code, 0, r3.stderr);
  t.equal(r3.stderr, '');
});

t.test('a CLI command that needs no database does not load the SQLite driver', async (t) => {
  const sb = sandbox('sc-boot');
  // NODE_DEBUG=module logs every module the loader resolves; better-sqlite3 must not be among them.
  const r = await spawnCli(sb, ['--help'], '', { NODE_DEBUG: 'module' });
  t.equal(r.code, 0);
  t.notMatch(r.stderr, /better-sqlite3/);
  const s = await spawnCli(sb, ['status'], '', { NODE_DEBUG: 'module' });
  t.equal(s.code, 0, 'status runs');
  t.match(s.stderr, /better-sqlite3/, 'while one that opens the database does');
});
