import { spawn } from 'node:child_process';
import t, { type Test } from 'tap';
import { appendAudit, appendAuditRows, deferAudit, deferredAuditRows, flushAudit, readAudit, verifyAudit } from '../../src/store/audit.js';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { ROOT, sandbox, TS_REQUIRE, until } from '../fixtures/env.js';

function fresh(t: Test) {
  const sb = sandbox('sc-audit');
  ensureProfileDir(sb.profile);
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  return { sb, db };
}

t.test('an intact chain verifies and reports its head', async (t) => {
  const { db } = fresh(t);
  t.same(verifyAudit(db), { ok: true, rows: 0, head: null });
  for (let i = 0; i < 5; i++) appendAudit(db, 'decision', { i });
  const r = verifyAudit(db);
  t.equal(r.ok, true);
  t.equal(r.rows, 5);
  t.match(r.head, /^[0-9a-f]{64}$/);
  t.same(readAudit(db, { limit: 10 }).map((e) => (e.body as { i: number }).i), [0, 1, 2, 3, 4]);
});

t.test('rows cannot be updated or deleted through SQL', async (t) => {
  const { db } = fresh(t);
  appendAudit(db, 'decision', { a: 1 });
  t.throws(() => db.prepare("UPDATE audit SET body = '{}'").run(), /append-only/);
  t.throws(() => db.prepare('DELETE FROM audit').run(), /append-only/);
});

t.test('an edited row is reported as the first break, even with the triggers dropped', async (t) => {
  const { db } = fresh(t);
  for (let i = 0; i < 4; i++) appendAudit(db, 'decision', { i });
  db.exec('DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;');
  db.prepare("UPDATE audit SET body = '{\"i\":99}' WHERE seq = 3").run();
  t.same(verifyAudit(db).first_break, { seq: 3, reason: 'hash_mismatch' });
});

t.test('a removed row is a sequence gap; a rehashed forgery breaks the next link', async (t) => {
  const { db } = fresh(t);
  for (let i = 0; i < 4; i++) appendAudit(db, 'decision', { i });
  db.exec('DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;');
  db.prepare('DELETE FROM audit WHERE seq = 2').run();
  t.same(verifyAudit(db).first_break, { seq: 3, reason: 'sequence_gap' });

  const { db: db2 } = fresh(t);
  for (let i = 0; i < 3; i++) appendAudit(db2, 'decision', { i });
  db2.exec('DROP TRIGGER audit_no_update;');
  // A forger who recomputes row 2's own hash still cannot fix row 3's prev without rewriting everything after.
  // The first digit always changes (a fixed 'f' left one hash in sixteen as it was, and the test passed nothing).
  db2.prepare("UPDATE audit SET hash = (CASE substr(hash, 1, 1) WHEN 'f' THEN '0' ELSE 'f' END) || substr(hash, 2) WHERE seq = 2").run();
  const r = verifyAudit(db2);
  t.equal(r.ok, false);
  t.equal(r.first_break?.seq, 2);
});

t.test('rows appended together share one transaction and keep their order', async (t) => {
  const { db } = fresh(t);
  appendAudit(db, 'decision', { n: 0 });
  const seqs = appendAuditRows(db, () => [{ kind: 'decision', body: { n: 1 } }, { kind: 'decision', body: { n: 2 } }]);
  t.same(seqs, [2, 3]);
  const rows = readAudit(db, { limit: 10 });
  t.equal(rows[1]?.at, rows[2]?.at, 'one commit');
  t.same(rows.map((r) => (r.body as { n: number }).n), [0, 1, 2]);
  t.throws(() => appendAuditRows(db, () => {
    throw new Error('refused while building');
  }), /refused while building/);
  t.equal(verifyAudit(db).rows, 3, 'a batch that fails while building writes nothing');
});

t.test('deferred rows ride with the next commit, before its own rows', async (t) => {
  const { db } = fresh(t);
  const bound = { flush_ms: 60000, rows: 100 };
  appendAudit(db, 'decision', { n: 1 });
  deferAudit(db, 'http_outcome', { n: 2 }, bound);
  deferAudit(db, 'http_outcome', { n: 3 }, bound);
  t.equal(verifyAudit(db).rows, 1, 'not written yet');
  t.equal(deferredAuditRows(db), 2);
  const [seq] = appendAuditRows(db, () => [{ kind: 'decision', body: { n: 4 } }]);
  t.equal(seq, 4, 'the new row follows the deferred ones');
  t.same(readAudit(db, { limit: 10 }).map((r) => [r.kind, (r.body as { n: number }).n]), [['decision', 1], ['http_outcome', 2], ['http_outcome', 3], ['decision', 4]]);
  t.equal(deferredAuditRows(db), 0);
  t.ok(verifyAudit(db).ok);
});

t.test('deferred rows are flushed at the row bound, after the time bound, and on request', async (t) => {
  const { db } = fresh(t);
  deferAudit(db, 'http_outcome', { n: 1 }, { flush_ms: 60000, rows: 2 });
  t.equal(verifyAudit(db).rows, 0);
  deferAudit(db, 'http_outcome', { n: 2 }, { flush_ms: 60000, rows: 2 });
  t.equal(verifyAudit(db).rows, 2, 'the row bound flushes at once');
  deferAudit(db, 'http_outcome', { n: 3 }, { flush_ms: 20, rows: 100 });
  await until(() => verifyAudit(db).rows === 3);
  t.pass('the time bound flushes without another commit');
  deferAudit(db, 'http_outcome', { n: 4 }, { flush_ms: 60000, rows: 100 });
  flushAudit(db);
  t.equal(verifyAudit(db).rows, 4);
  t.ok(verifyAudit(db).ok);
});

t.test('two processes appending at once keep one unbroken chain', async (t) => {
  const { sb, db } = fresh(t);
  // Each writer also defers rows, as the HTTP gateway does with outcomes: they join the chain with its next commit.
  const script = `
    const { openDb } = require('./src/store/db.ts');
    const { appendAudit, deferAudit, flushAudit } = require('./src/store/audit.ts');
    const db = openDb(process.argv[1], 10000);
    // Both writers start their loops together: each says it is ready, then waits for the go.
    process.stdout.write('ready\\n');
    process.stdin.once('data', () => {
      for (let i = 0; i < 100; i++) {
        appendAudit(db, 'decision', { w: process.argv[2], i });
        if (i % 2) deferAudit(db, 'http_outcome', { w: process.argv[2], i }, { flush_ms: 60000, rows: 7 });
      }
      flushAudit(db);
      db.close();
    });
  `;
  const writers = ['a', 'b'].map((who) => {
    const c = spawn(process.execPath, [...TS_REQUIRE, '-e', script, sb.profile, who], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    const ready = new Promise<void>((resolve, reject) => {
      c.stdout.once('data', () => resolve());
      c.once('close', (code) => reject(new Error(`writer ${who} exited ${code} before it was ready`)));
    });
    const closed = new Promise<number>((resolve) => c.on('close', (code) => resolve(code ?? -1)));
    return { c, ready, closed };
  });
  await Promise.all(writers.map((w) => w.ready));
  for (const w of writers) w.c.stdin.end('go\n');
  const codes = await Promise.all(writers.map((w) => w.closed));
  t.same(codes, [0, 0]);
  const r = verifyAudit(db);
  t.equal(r.ok, true);
  t.equal(r.rows, 300);
});
