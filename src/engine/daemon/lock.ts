/*
 * One engine per profile. The running engine holds an exclusive SQLite lock on
 * <profile>/engine.lock for its whole life: the kernel drops it when the process
 * ends, however it ends, so a crashed engine never leaves a lock behind, and of
 * two engines starting at once exactly one gets it. Only the holder may replace
 * a socket file it finds, which is how a stale socket of a dead engine goes away
 * without racing a live one.
 */
import { closeSync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { ScError } from '../../errors.js';
import { openSqlite } from '../../store/sqlite-driver.js';

export interface EngineLock {
  release(): void;
}

/** The lock, or null when another engine holds it. */
export function acquireEngineLock(path: string): EngineLock | null {
  closeSync(openSync(path, 'a', 0o600));
  let db: Database.Database;
  try {
    db = openSqlite(path, { timeout: 0 });
    db.pragma('journal_mode = DELETE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL)');
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw new ScError('SC_ENGINE_START_FAILED', `cannot open the engine lock ${path}: ${(err as Error).message}`);
  }
  try {
    // Rollback-journal mode: the write inside the open transaction pins the file's
    // exclusive lock until rollback (BEGIN alone was observed not to hold it).
    db.exec('BEGIN EXCLUSIVE');
    db.prepare('INSERT INTO holder (pid) VALUES (?)').run(process.pid);
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw new ScError('SC_ENGINE_START_FAILED', `cannot take the engine lock ${path}: ${(err as Error).message}`);
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}
