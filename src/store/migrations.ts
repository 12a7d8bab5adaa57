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
  `
  CREATE TABLE jobs (
    id         TEXT PRIMARY KEY,
    project    TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('test', 'agent')),
    owner      TEXT NOT NULL,
    ceiling    TEXT NOT NULL CHECK (ceiling IN ('read_only', 'workspace', 'elevated')),
    state      TEXT NOT NULL CHECK (state IN ('queued', 'running', 'waiting_approval', 'succeeded', 'failed', 'cancelled')),
    title      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX jobs_project ON jobs (project, created_at);
  CREATE TABLE job_events (
    seq    INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL REFERENCES jobs (id),
    at     TEXT NOT NULL,
    kind   TEXT NOT NULL,
    body   TEXT NOT NULL
  );
  CREATE INDEX job_events_job ON job_events (job_id, seq);
  CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    project    TEXT NOT NULL,
    title      TEXT NOT NULL,
    job_id     TEXT REFERENCES jobs (id),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX sessions_project ON sessions (project, updated_at, id);
  CREATE TABLE memory (
    project    TEXT NOT NULL,
    scope      TEXT NOT NULL CHECK (scope IN ('project', 'task')),
    task_id    TEXT NOT NULL DEFAULT '',
    content    TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project, scope, task_id)
  );
  CREATE TABLE goals (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL CHECK (state IN ('open', 'done', 'abandoned')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
  );
  CREATE INDEX goals_project ON goals (project, created_at, id);
  CREATE TABLE goal_steps (
    seq     INTEGER PRIMARY KEY,
    goal_id TEXT NOT NULL REFERENCES goals (id),
    at      TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('advance', 'complete', 'abandon')),
    note    TEXT NOT NULL
  );
  `,
  `
  ALTER TABLE jobs ADD COLUMN task_id TEXT;
  ALTER TABLE jobs ADD COLUMN argv TEXT;
  ALTER TABLE jobs ADD COLUMN exit_code INTEGER;
  ALTER TABLE jobs ADD COLUMN duration_ms INTEGER;
  CREATE INDEX jobs_owner ON jobs (owner, state);
  CREATE TABLE approvals (
    id         TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs (id),
    kind       TEXT NOT NULL CHECK (kind IN ('command', 'write', 'mcp_call')),
    action     TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'cancelled')),
    created_at TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT
  );
  CREATE INDEX approvals_job ON approvals (job_id, state);
  CREATE TABLE checkpoints (
    id         TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs (id),
    project    TEXT NOT NULL,
    path       TEXT NOT NULL,
    existed    INTEGER NOT NULL CHECK (existed IN (0, 1)),
    mode       INTEGER,
    content    BLOB,
    sha256     TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (job_id, path)
  );
  CREATE TABLE changes (
    seq        INTEGER PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs (id),
    project    TEXT NOT NULL,
    path       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('write', 'delete', 'rollback')),
    state      TEXT NOT NULL CHECK (state IN ('pending', 'applied', 'aborted')),
    why        TEXT NOT NULL,
    before_sha TEXT,
    after_sha  TEXT,
    at         TEXT NOT NULL
  );
  CREATE INDEX changes_path ON changes (project, path, seq);
  CREATE INDEX changes_job ON changes (job_id, seq);
  CREATE INDEX changes_pending ON changes (seq) WHERE state = 'pending';
  `,
  `
  CREATE TABLE definitions (
    id         TEXT PRIMARY KEY,
    source     TEXT NOT NULL CHECK (source IN ('config', 'plugin')),
    plugin     TEXT,
    body       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE grants (
    project       TEXT NOT NULL,
    definition_id TEXT NOT NULL,
    hash          TEXT NOT NULL,
    granted_at    TEXT NOT NULL,
    PRIMARY KEY (project, definition_id)
  );
  CREATE INDEX grants_definition ON grants (definition_id);
  CREATE TABLE plugins (
    name         TEXT PRIMARY KEY,
    version      TEXT NOT NULL,
    installed_at TEXT NOT NULL
  );
  `,
  `
  ALTER TABLE projects ADD COLUMN network INTEGER NOT NULL DEFAULT 0 CHECK (network IN (0, 1));
  `,
  `
  CREATE TABLE catalog_pins (
    project       TEXT NOT NULL,
    definition_id TEXT NOT NULL,
    pinned_hash   TEXT NOT NULL,
    pinned_body   TEXT NOT NULL,
    pinned_at     TEXT NOT NULL,
    seen_hash     TEXT NOT NULL,
    seen_body     TEXT NOT NULL,
    seen_at       TEXT NOT NULL,
    PRIMARY KEY (project, definition_id)
  );
  `,
  `
  CREATE TABLE cancel_requests (
    job_id       TEXT PRIMARY KEY,
    requested_at TEXT NOT NULL,
    requested_by TEXT NOT NULL
  );
  `,
  `
  CREATE TABLE watches (
    id        TEXT PRIMARY KEY,
    job_id    TEXT NOT NULL REFERENCES jobs (id),
    project   TEXT NOT NULL,
    taken_at  TEXT NOT NULL,
    last_seq  INTEGER NOT NULL,
    truncated TEXT,
    ignores   TEXT NOT NULL,
    run_dir   TEXT
  );
  CREATE TABLE watch_files (
    watch_id TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    path     TEXT NOT NULL,
    sha      TEXT,
    mode     INTEGER,
    stamp    TEXT NOT NULL,
    racy     INTEGER NOT NULL CHECK (racy IN (0, 1)),
    kept     INTEGER NOT NULL CHECK (kept IN (0, 1)),
    content  BLOB,
    PRIMARY KEY (watch_id, path)
  );
  ALTER TABLE checkpoints ADD COLUMN kept INTEGER NOT NULL DEFAULT 1 CHECK (kept IN (0, 1));
  `,
];
