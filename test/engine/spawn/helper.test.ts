// shadowcode's own helper (the SQLite query child behind shadow_sqlite) runs in a sandbox
// of its own: the database's files and node, nothing else. Real bwrap, real processes:
// from inside that sandbox ATTACH of the profile's secrets.json or state.db, reading the
// project or the home, writing the database and a loopback connection all fail, each with
// the error the sandbox causes (the file is not there, the mount is read-only); the same
// probe run without the sandbox reaches every one of them, so no failure is SQLite's own.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import t from 'tap';
import { databaseFiles } from '../../../src/engine/sqlite-query.js';
import { sandboxSupport, startHelper } from '../../../src/engine/spawn/index.js';
import { enforce } from '../../../src/policy/gate.js';
import { readAudit } from '../../../src/store/audit.js';
import { trustAsCli } from '../../fixtures/decide.js';
import { ROOT } from '../../fixtures/env.js';
import { fields } from '../../fixtures/exact.js';
import { connection, sandbox } from '../../fixtures/env.js';
import { isRoot } from '../../fixtures/sandboxed.js';

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  t.equal(sandboxSupport().level, 'bwrap', sandboxSupport().detail);
});

async function setup(t: any) {
  const sb = sandbox('sc-helper');
  const file = join(sb.project, 'app.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada'), ('bob');");
  writeFileSync(join(sb.project, 'notes.txt'), 'project file\n');
  const c = await connection(sb);
  t.teardown(() => (db.close(), c.close()));
  // The store exists now (state.db), with the project trusted as ticketFor's request says; a secret makes secrets.json.
  trustAsCli({ policy: c.engine.policy, db: c.engine.db() }, sb.project, 'workspace');
  writeFileSync(join(sb.profile, 'secrets.json'), '{"CANARY":"secret-canary-value"}', { mode: 0o600 });
  return { sb, file, ...c };
}

function ticketFor(c: { engine: any; conn: any }, sb: { project: string }) {
  return enforce(
    { policy: c.engine.policy, db: () => c.engine.db() },
    { action: 'tool:shadow_sqlite', principal: { kind: 'engine', owner: 'test', allow_write: false, allow_approvals: false }, project: { path: sb.project, trusted: true, level: 'workspace', network: false } },
    (ticket) => ticket,
  );
}

function run(child: import('node:child_process').ChildProcess, input: string): Promise<{ code: number | null; out: string; err: string }> {
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d) => (err += d));
  child.stdin!.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })));
}

t.test("from the query child's sandbox, the profile's secrets.json and state.db, the project, the home and the network are out of reach", async (t) => {
  const { sb, file, ...c } = await setup(t);
  const server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  let connections = 0;
  server.on('connection', () => connections++);
  const ticket = await ticketFor(c, sb);
  const { child, level } = startHelper(ticket, { program: join(ROOT, 'test', 'fixtures', 'helper-probe.mjs'), ...databaseFiles(file), policy: c.engine.policy, db: c.engine.db(), stdio: ['pipe', 'pipe', 'pipe'], project: sb.project });
  t.equal(level, 'bwrap');
  const r = await run(child, JSON.stringify({ db: file, secrets: join(sb.profile, 'secrets.json'), state_db: join(sb.profile, 'state.db'), project_file: join(sb.project, 'notes.txt'), home: sb.root, port: (server.address() as { port: number }).port }));
  t.equal(r.code, 0, r.err);
  const got = JSON.parse(r.out) as Record<string, string>;
  // Each failure is the one the sandbox causes: the file is not there (ENOENT, and SQLite's CANTOPEN rather than
  // the NOTADB it gives for secrets.json when it can see the file), the mount is read-only, the network is its own.
  const expected: Record<string, RegExp> = {
    query_own_db: /^ok: 2$/,
    attach_secrets: /^failed: SQLITE_CANTOPEN unable to open database: /,
    attach_state_db: /^failed: SQLITE_CANTOPEN unable to open database: /,
    attach_new_file: /^failed: SQLITE_CANTOPEN unable to open database: /,
    read_secrets: /^failed: ENOENT /,
    read_project_file: /^failed: ENOENT /,
    // The home holds only the empty folders bwrap made on the way to the database's mount point.
    list_home: /^ok: project$/,
    list_profile: /^failed: ENOENT /,
    write_db: /^failed: EROFS /,
    // The filter every sandbox gets; and /etc/shadow covered (root inside could read it otherwise).
    seccomp: /^ok: 2$/,
    read_etc_shadow: /^failed: EACCES /,
    connect_loopback: /^failed: (ECONNREFUSED|ENETUNREACH)$/,
  };
  t.same(Object.keys(got).sort(), Object.keys(expected).sort(), 'every probe reported');
  for (const [k, re] of Object.entries(expected)) t.match(got[k], re, `${k}: ${got[k]}`);
  t.notMatch(r.out, /secret-canary-value/, 'nothing of the secret came out');
  t.equal(connections, 0, 'the listener outside saw no connection');
});

t.test('the same probe without the sandbox reaches all of it: the failures above are the sandbox\'s, not SQLite\'s or the driver\'s', async (t) => {
  const { sb, file } = await setup(t);
  const server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  // Run as a plain child of the test, as startHelper would with no sandbox: the control for the test above.
  const child = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'helper-probe.mjs')], { stdio: ['pipe', 'pipe', 'pipe'] });
  const r = await run(child, JSON.stringify({ db: file, secrets: join(sb.profile, 'secrets.json'), state_db: join(sb.profile, 'state.db'), project_file: join(sb.project, 'notes.txt'), home: sb.root, port: (server.address() as { port: number }).port }));
  t.equal(r.code, 0, r.err);
  const got = JSON.parse(r.out) as Record<string, string>;
  t.match(got.attach_secrets, /^failed: SQLITE_NOTADB /, 'SQLite sees secrets.json and finds no database in it');
  t.match(got.attach_state_db, /^ok: \d+$/, "the profile's state.db attaches");
  t.match(got.read_secrets, /secret-canary-value/, 'secrets.json reads');
  t.equal(got.read_project_file, 'ok: project file\n');
  t.match(got.list_profile, /^ok: .*secrets\.json/);
  t.equal(got.write_db, 'ok: written');
  t.equal(got.seccomp, 'ok: 0', 'no syscall filter');
  t.match(got.read_etc_shadow, isRoot ? /^ok: [1-9]\d*$/ : /^failed: EACCES /, 'root reads /etc/shadow, anyone else may not');
  t.equal(got.connect_loopback, 'ok: connected');
});

t.test('the real query child cannot be pointed at the profile: a job naming secrets.json or state.db fails to open', async (t) => {
  const { sb, file, ...c } = await setup(t);
  const ticket = await ticketFor(c, sb);
  for (const target of [join(sb.profile, 'secrets.json'), join(sb.profile, 'state.db')]) {
    const { child } = startHelper(ticket, { program: join(ROOT, 'dist', 'sqlite-child.cjs'), ...databaseFiles(file), policy: c.engine.policy, db: c.engine.db(), stdio: ['pipe', 'pipe', 'pipe'], project: sb.project });
    const r = await run(child, JSON.stringify({ path: target, action: 'tables', max_rows: 10, max_bytes: 10000 }));
    t.equal(r.code, 0, r.err);
    const [first, result] = [r.out.slice(0, r.out.indexOf('\n')), JSON.parse(r.out.slice(r.out.indexOf('\n') + 1))];
    t.equal(first, 'failed', `${target} was never opened`);
    t.equal(result.error.code, 'SC_SQL_FAILED');
    t.match(result.error.message, /unable to open|directory does not exist|no such file/i);
  }
});

t.test('shadow_sqlite runs its query child sandboxed, and the audit log says so', async (t) => {
  const { call, engine } = await setup(t);
  const r = await call('shadow_sqlite', { action: 'query', path: 'app.db', sql: 'SELECT name FROM users ORDER BY id' });
  t.same(r.data.rows, [['ada'], ['bob']]);
  t.same(fields(readAudit(engine.db(), { kinds: ['spawn'], limit: 10 }).map((x) => x.body), ['kind', 'argv0', 'level', 'network']), [{ kind: 'helper', argv0: 'sqlite-child', level: 'bwrap', network: false }], 'one spawn row: the helper, sandboxed');
});
