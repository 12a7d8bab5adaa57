import { spawn } from 'node:child_process';
import t, { type Test } from 'tap';
import { appendAudit, readAudit, verifyAudit } from '../../src/store/audit.js';
import { openDb } from '../../src/store/db.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { ROOT, sandbox } from '../fixtures/env.js';

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
  db2.prepare("UPDATE audit SET hash = 'f' || substr(hash, 2) WHERE seq = 2").run();
  const r = verifyAudit(db2);
  t.equal(r.ok, false);
  t.equal(r.first_break?.seq, 2);
});

t.test('two processes appending at once keep one unbroken chain', async (t) => {
  const { sb, db } = fresh(t);
  const script = `
    import { openDb } from './src/store/db.ts';
    import { appendAudit } from './src/store/audit.ts';
    const db = openDb(process.argv[1], 10000);
    for (let i = 0; i < 100; i++) appendAudit(db, 'decision', { w: process.argv[2], i });
    db.close();
  `;
  const run = (who: string) =>
    new Promise<number>((resolve) => {
      const c = spawn(process.execPath, ['--import', 'file://' + ROOT + 'node_modules/@tapjs/typescript/dist/esm/import.mjs', '--input-type=module', '-e', script, sb.profile, who], { cwd: ROOT, stdio: 'inherit' });
      c.on('close', (code) => resolve(code ?? -1));
    });
  const codes = await Promise.all([run('a'), run('b')]);
  t.same(codes, [0, 0]);
  const r = verifyAudit(db);
  t.equal(r.ok, true);
  t.equal(r.rows, 200);
});
