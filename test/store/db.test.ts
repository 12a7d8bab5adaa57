import { statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { sandbox } from '../fixtures/env.js';

t.test('opens in WAL mode with foreign keys, migrated, and private to the user', async (t) => {
  const sb = sandbox();
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 1000);
  t.teardown(() => db.close());
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('foreign_keys', { simple: true }), 1);
  t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  t.equal(statSync(join(sb.profile, 'state.db')).mode & 0o777, 0o600);
});

t.test('a second connection works while the first holds the database open', async (t) => {
  const sb = sandbox();
  ensureProfileDir(sb.profile);
  const a = openDb(sb.profile, 1000);
  const b = openDb(sb.profile, 1000);
  t.teardown(() => (a.close(), b.close()));
  a.prepare("INSERT INTO projects (path, trusted, level, updated_at) VALUES ('/x', 1, 'workspace', 'now')").run();
  t.same(b.prepare('SELECT path FROM projects').all(), [{ path: '/x' }]);
});

t.test('a database from a newer shadowcode is refused, not downgraded', async (t) => {
  const sb = sandbox();
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 1000);
  db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
  db.close();
  t.throws(() => openDb(sb.profile, 1000), { code: 'SC_STORE_NEWER' });
});

t.test('a file that is not SQLite is a clear store error', async (t) => {
  const sb = sandbox();
  ensureProfileDir(sb.profile);
  (await import('node:fs')).writeFileSync(join(sb.profile, 'state.db'), 'this is not a database, just text that is long enough'.repeat(20));
  t.throws(() => openDb(sb.profile, 1000), { code: 'SC_STORE_FAILED' });
});
