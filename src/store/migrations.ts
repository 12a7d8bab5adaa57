/*
 * Versioned schema of state.db. PRAGMA user_version records how many entries of
 * MIGRATIONS have run; each runs once, in order, inside one immediate
 * transaction so two processes opening a new profile at once cannot both apply it.
 * Never edit a released entry: append a new one.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE audit (
    seq  INTEGER PRIMARY KEY,
    at   TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
  );
  CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
  CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
  CREATE TABLE projects (
    path       TEXT PRIMARY KEY,
    trusted    INTEGER NOT NULL CHECK (trusted IN (0, 1)),
    level      TEXT NOT NULL CHECK (level IN ('read_only', 'workspace', 'elevated')),
    trusted_at TEXT,
    updated_at TEXT NOT NULL
  );
  `,
];
