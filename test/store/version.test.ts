// The store's version token, on real profile databases: it moves on a commit from another
// process, from another connection in this one, and from this connection's own write, and
// stays put while only reads happen, so a poller that sees it unchanged may skip its queries.
import { spawn } from 'node:child_process';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { storeVersion } from '../../src/store/version.js';
import { ROOT, sandbox, TS_REQUIRE } from '../fixtures/env.js';

const setting = (db: ReturnType<typeof openDb>, v: string) => db.prepare("INSERT OR REPLACE INTO projects (path, trusted, level, updated_at) VALUES ('/p', 0, 'read_only', ?)").run(v);

t.test('the version moves on every commit, whoever makes it, and never on a read', async (t) => {
  const sb = sandbox('version');
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const first = storeVersion(db);
  db.prepare('SELECT count(*) FROM jobs').get();
  t.equal(storeVersion(db), first, 'reads leave it');

  setting(db, 'own');
  const own = storeVersion(db);
  t.not(own, first, "this connection's own write moves it");

  const other = openDb(sb.profile, 5000);
  setting(other, 'other');
  other.close();
  const afterOther = storeVersion(db);
  t.not(afterOther, own, 'a commit by another connection of this process moves it');

  const script = `const { openDb } = require(${JSON.stringify(`${ROOT}src/store/db.ts`)});
    const db = openDb(${JSON.stringify(sb.profile)}, 5000);
    db.prepare("UPDATE projects SET updated_at = 'child' WHERE path = '/p'").run();
    db.close();`;
  const code = await new Promise<number | null>((resolve) => spawn(process.execPath, [...TS_REQUIRE, '-e', script], { stdio: 'inherit' }).on('close', resolve));
  t.equal(code, 0);
  const afterChild = storeVersion(db);
  t.not(afterChild, afterOther, 'a commit by another process moves it');
  t.equal(storeVersion(db), afterChild, 'and it holds still after');
});
