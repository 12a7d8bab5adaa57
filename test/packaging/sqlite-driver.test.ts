/*
 * The installed package opens its databases with one better-sqlite3: the JavaScript and the
 * native addon of the same version. dist/cli.cjs carries the JavaScript of the version it was
 * built with (src/store/sqlite-driver.ts) and takes the addon from the package npm installed
 * beside it, which the dependency's range lets be a later version: then the installed
 * package's own JavaScript drives its addon, never the bundled copy.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { sandbox } from '../fixtures/env.js';
import { installedPackage } from '../fixtures/install.js';

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'sc-sqlite-driver-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

/** A prefix of its own: shadowcode and better-sqlite3 copied from the shared install (never written to), the rest linked. */
function ownPrefix(shared: string, name: string): string {
  const modules = join(work, name, 'node_modules');
  mkdirSync(modules, { recursive: true });
  for (const entry of readdirSync(join(shared, 'node_modules'))) {
    if (entry === '.bin' || entry.startsWith('.')) continue;
    const from = join(shared, 'node_modules', entry);
    if (entry === 'shadowcode' || entry === 'better-sqlite3') cpSync(from, join(modules, entry), { recursive: true });
    else symlinkSync(from, join(modules, entry), 'dir');
  }
  return modules;
}

/** Runs the installed CLI's `status` (it opens the profile's database); the better-sqlite3 files Node loaded. */
async function statusLoads(modules: string): Promise<string[]> {
  const sb = sandbox('sqlite-driver');
  const out = join(work, `loaded-${Math.random().toString(36).slice(2)}.json`);
  const preload = join(work, 'preload.cjs');
  writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.SC_LOADED_OUT, JSON.stringify(Object.keys(require.cache))));\n");
  const r = await run(process.execPath, ['--require', preload, join(modules, 'shadowcode', 'bin', 'shadowcode.js'), '--project', sb.project, '--json', 'status'], { env: { ...sb.env, SC_LOADED_OUT: out } as Record<string, string> });
  JSON.parse(r.stdout);
  return (JSON.parse(readFileSync(out, 'utf8')) as string[]).filter((f) => f.startsWith(join(modules, 'better-sqlite3')));
}

t.test('the installed package opens its database with the JavaScript of the better-sqlite3 whose addon it loads', async (t) => {
  const { prefix } = await installedPackage();
  const pkgOf = (modules: string) => join(modules, 'better-sqlite3', 'package.json');
  const index = (modules: string) => join(modules, 'better-sqlite3', 'lib', 'index.js');
  const addon = (modules: string) => join(modules, 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');

  // The version the CLI was built with: its bundled JavaScript, and only the addon from the package.
  const same = ownPrefix(prefix, 'same');
  const asBuilt = await statusLoads(same);
  t.ok(asBuilt.includes(addon(same)), 'the version it was built with: the addon is loaded from the package');
  t.same(asBuilt.filter((f) => f.endsWith('.js')), [], 'and none of its JavaScript: the bundled copy drives it');

  // npm installed a later version within the range: its JavaScript goes with its addon.
  const later = ownPrefix(prefix, 'later');
  const meta = JSON.parse(readFileSync(pkgOf(later), 'utf8')) as { version: string };
  const [major] = meta.version.split('.');
  writeFileSync(pkgOf(later), JSON.stringify({ ...meta, version: `${major}.999.0` }));
  const loaded = await statusLoads(later);
  t.ok(loaded.includes(addon(later)), 'the addon is loaded from the package');
  t.ok(loaded.includes(index(later)), "and the package's own JavaScript with it, not the bundled copy");
});
