import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { cli, sandbox } from '../fixtures/env.js';

t.test('audit verify reports an intact chain, then the first tampered row with exit 4', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  await cli(sb, ['--project', sb.project, 'untrust']);
  await cli(sb, ['--project', sb.project, 'trust']);
  const ok = await cli(sb, ['--json', 'audit', 'verify']);
  t.equal(ok.code, 0);
  t.match(JSON.parse(ok.stdout), { ok: true, rows: 3 });

  const db = openDb(sb.profile, 1000);
  db.exec('DROP TRIGGER audit_no_update');
  db.prepare(`UPDATE audit SET body = replace(body, '"allow":true', '"allow":false') WHERE seq = 2`).run();
  db.close();
  const broken = await cli(sb, ['audit', 'verify']);
  t.equal(broken.code, 4);
  t.match(broken.stdout, /audit chain BROKEN at row 2 \(hash_mismatch\)/);
  const json = await cli(sb, ['--json', 'audit', 'verify']);
  t.match(JSON.parse(json.stdout), { ok: false, first_break: { seq: 2, reason: 'hash_mismatch' } });
});
