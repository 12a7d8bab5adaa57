/*
 * better-sqlite3, loaded when a database first opens: most launches (and tools/list) never need it.
 *
 *   first open ─► the package's addon where its install puts it (build/Release)?
 *       yes ─► its JavaScript: in dist/cli.cjs bundled, so compiled from the CLI's code cache;
 *              from source or the library, required from the package ─► the addon, by path
 *       no, or the package is not the version dist/cli.cjs carries ─► the package as it is:
 *              its own JavaScript, whose `bindings` search finds the addon
 *
 * Why: Node's loader resolving, reading and compiling the package's dozen files one by one, and
 * `bindings` probing a dozen paths for the addon (a stack trace and a stat each), were ~10 ms of
 * CPU of every start that opens a database. The bundled copy is only ever given the addon: its
 * `bindings` would look for it beside dist/, not in the package.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';

type DatabaseClass = typeof Database;

let driver: { readonly Database: DatabaseClass; readonly addon?: object } | undefined;

function load(): NonNullable<typeof driver> {
  const req = createRequire(import.meta.url);
  const manifest = req.resolve('better-sqlite3/package.json');
  const addon = join(dirname(manifest), 'build', 'Release', 'better_sqlite3.node');
  // A plain require here is what esbuild bundles into dist/cli.cjs (scripts/build.mjs); ES modules (source, tests) have none.
  const own = typeof require === 'function';
  // The bundled JavaScript is the version the CLI was built with; the dependency's range lets npm install a later
  // one, whose addon only its own JavaScript may drive. `req` reads the installed manifest; a plain require (bundled), ours.
  type Manifest = { version?: string };
  if (!existsSync(addon) || (own && (require('better-sqlite3/package.json') as Manifest).version !== (req(manifest) as Manifest).version)) return { Database: req('better-sqlite3') as DatabaseClass };
  const js = (own ? require('better-sqlite3') : req('better-sqlite3')) as DatabaseClass;
  return { Database: js, addon: req(addon) as object };
}

/** A connection to the SQLite file at `path`, as `new Database(path, options)` opens it. */
export function openSqlite(path: string, options: Database.Options): Database.Database {
  const d = (driver ??= load());
  return new d.Database(path, d.addon ? { ...options, nativeBinding: d.addon as never } : options);
}
