/*
 * Opens a profile's state.db: WAL so a CLI command and a running server both
 * work, foreign keys on, a busy timeout from policy, then pending migrations.
 * The driver itself is loaded on the first open, not at start-up (sqlite-driver.ts).
 */
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { ScError } from '../errors.js';
import { MIGRATIONS } from './migrations.js';
import { openSqlite } from './sqlite-driver.js';

export type Db = Database.Database;

export function openDb(profileDir: string, busyTimeoutMs: number): Db {
  const path = join(profileDir, 'state.db');
  let db: Db;
  try {
    // Create the file 0600 before SQLite does; its -wal and -shm files copy this mode.
    closeSync(openSync(path, 'a', 0o600));
    db = openSqlite(path, { timeout: busyTimeoutMs });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (err) {
    throw new ScError('SC_STORE_FAILED', `cannot open ${path}: ${(err as Error).message}`);
  }
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new ScError('SC_STORE_NEWER', `state.db has schema version ${current}; this shadowcode knows ${MIGRATIONS.length}. Upgrade shadowcode.`);
  }
  if (current === MIGRATIONS.length) return;
  db.transaction(() => {
    // Re-read inside the lock: another process may have migrated meanwhile.
    const v = db.pragma('user_version', { simple: true }) as number;
    for (let i = v; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i] as string);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/** Runs fn holding the database write lock; used as a cross-process mutex for files beside the database. */
export function withWriteLock<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}

const cache = new WeakMap<Db, Map<string, Database.Statement>>();

/** A prepared statement, compiled once per connection: hot paths run the same few statements on every call. */
export function sql(db: Db, text: string): Database.Statement {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let st = m.get(text);
  if (!st) m.set(text, (st = db.prepare(text)));
  return st;
}
