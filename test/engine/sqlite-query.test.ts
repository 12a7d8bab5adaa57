import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { shippedPolicy } from '../../src/policy/load.js';
import { connection, sandbox } from '../fixtures/env.js';

// The shipped policy throughout, its 2 s deadline included: the deadline starts once the query
// process has opened the database, so a slow start on a loaded machine does not count against it.
const shipped = shippedPolicy();

/** This process's query children still in the process table. */
function queryChildren(): string[] {
  return execFileSync('ps', ['-o', 'pid=,stat=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes('sqlite-child') && !/^\s*\d+\s+Z/.test(l));
}

async function withDb(t: any, policy = shipped) {
  const sb = sandbox();
  const file = join(sb.project, 'app.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, avatar BLOB); INSERT INTO users (name, avatar) VALUES ('ada', x'0102'), ('bob', NULL);");
  const c = await connection(sb, { policy });
  t.teardown(() => (db.close(), c.close()));
  return { sb, db, ...c };
}

t.test('lists tables with their columns', async (t) => {
  const { call } = await withDb(t);
  const r = await call('shadow_sqlite', { action: 'tables', path: 'app.db' });
  t.same(r.data.tables, [{ name: 'users', type: 'table', columns: [{ name: 'id', type: 'INTEGER', primary_key: true }, { name: 'name', type: 'TEXT', primary_key: false }, { name: 'avatar', type: 'BLOB', primary_key: false }] }]);
});

t.test('runs a query with bound parameters, and sees live WAL data of an open writer', async (t) => {
  const { call, db } = await withDb(t);
  db.prepare("INSERT INTO users (name) VALUES ('live')").run(); // still in the WAL: the writer is open and has not checkpointed
  const r = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'SELECT id, name, avatar FROM users WHERE name <> ? ORDER BY id', params: ['bob'] });
  t.same(r.data.columns, ['id', 'name', 'avatar']);
  t.same(r.data.rows, [[1, 'ada', { base64: 'AQI=' }], [3, 'live', null]]);
  const named = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'SELECT name FROM users WHERE id = :id', params: { id: 2 } });
  t.same(named.data.rows, [['bob']]);
});

t.test('writes, ATTACH, VACUUM and side-effecting pragmas are refused, and nothing changes', async (t) => {
  const { call, db } = await withDb(t);
  for (const sql of [
    "INSERT INTO users (name) VALUES ('x')",
    'DELETE FROM users',
    'DROP TABLE users',
    "ATTACH DATABASE '/tmp/x.db' AS x",
    'PRAGMA journal_mode = DELETE',
    'PRAGMA wal_checkpoint(TRUNCATE)',
    'VACUUM',
    "SELECT load_extension('x')",
  ]) {
    const r = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql });
    t.equal(r.isError, true, sql);
    t.match(r.data.error.code, /^SC_SQL_(REFUSED|FAILED)$/, sql);
  }
  t.equal((db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n, 2);
  const ok = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: "SELECT 'attach' AS word, name FROM pragma_table_info('users') -- ATTACH in a comment" });
  t.equal(ok.isError, false, 'keywords inside strings and comments do not count');
});

t.test('quoting a pragma name does not get it past the guard (issue 11)', async (t) => {
  const { call, sb } = await withDb(t);
  const quoted = ['PRAGMA "locking_mode"=EXCLUSIVE', 'PRAGMA "mmap_size"=268435456', 'PRAGMA "hard_heap_limit"=1', 'PRAGMA "secure_delete"=1', 'PRAGMA "integrity_check"', 'PRAGMA "optimize"'];
  // SQLite itself runs each of these on a read-only connection: only the guard stands in the way.
  const writer = new Database(join(sb.root, 'plain.db'));
  writer.exec('CREATE TABLE x (a)');
  writer.close();
  const direct = new Database(join(sb.root, 'plain.db'), { readonly: true });
  t.teardown(() => direct.close());
  for (const sql of quoted) t.equal(direct.prepare(sql).readonly, true, `SQLite calls ${sql} read-only`);
  for (const sql of quoted) {
    const r = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql });
    t.equal(r.isError, true, sql);
    t.equal(r.data.error.code, 'SC_SQL_REFUSED', sql);
  }
  const ok = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'PRAGMA "table_info"("users")' });
  t.equal(ok.isError, false, 'an inspection pragma still runs when quoted');
  t.same(ok.data.rows.map((r: unknown[]) => r[1]), ['id', 'name', 'avatar']);
});

t.test('a FIFO or a /dev/zero link named as the database is refused unopened', async (t) => {
  const { call, sb } = await withDb(t);
  const { execFileSync } = await import('node:child_process');
  execFileSync('mkfifo', [join(sb.project, 'pipe.db')]);
  symlinkSync('/dev/zero', join(sb.project, 'zero.db'));
  t.equal((await call('shadow_sqlite', { action: 'tables', path: 'pipe.db' })).data.error.code, 'SC_FILE_REFUSED');
  t.equal((await call('shadow_sqlite', { action: 'tables', path: 'zero.db' })).data.error.code, 'SC_PATH_OUTSIDE');
});

t.test('the row limit stops the query', async (t) => {
  const { call } = await withDb(t);
  const many = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) SELECT x FROM c', max_rows: 10 });
  t.equal(many.data.rows.length, 10);
  t.equal(many.data.truncated, true);
});

t.test('the shipped 2 s deadline really stops an endless query: SC_TIMEOUT, and its process is gone', async (t) => {
  t.equal(shipped.limits.inspection.sqlite_deadline_ms, 2000);
  const { call } = await withDb(t, shipped);
  const started = Date.now();
  const slow = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c' });
  t.equal(slow.data.error.code, 'SC_TIMEOUT');
  t.match(slow.data.error.message, /longer than 2000 ms/);
  t.ok(Date.now() - started >= 2000, 'not stopped before the deadline');
  t.same(queryChildren(), [], 'the query process was killed, not left running');
});

t.test('only existing SQLite files inside the project', async (t) => {
  const { call, sb } = await withDb(t);
  writeFileSync(join(sb.project, 'notes.txt'), 'not a database at all, just text');
  mkdirSync(join(sb.root, 'outside'));
  new Database(join(sb.root, 'outside', 'o.db')).close();
  symlinkSync(join(sb.root, 'outside', 'o.db'), join(sb.project, 'link.db'));
  const cases: Array<[string, string]> = [['nope.db', 'SC_FILE_NOT_FOUND'], ['../outside/o.db', 'SC_PATH_OUTSIDE'], [join(sb.root, 'outside', 'o.db'), 'SC_PATH_OUTSIDE'], ['link.db', 'SC_PATH_OUTSIDE'], ['notes.txt', 'SC_SQL_FAILED']];
  for (const [path, code] of cases) t.equal((await call('shadow_sqlite', { action: 'tables', path })).data.error.code, code, path);
  t.equal((await call('shadow_sqlite', { action: 'query', path: 'app.db' })).data.error.code, 'SC_TOOL_ARGS_INVALID', 'a query needs sql');
});
