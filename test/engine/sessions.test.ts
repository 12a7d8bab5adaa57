import t from 'tap';
import { connection, sandbox } from '../fixtures/env.js';

t.test("sessions are filtered by project before the page limit", async (t) => {
  const sb = sandbox();
  const { call, engine, close } = await connection(sb);
  t.teardown(close);
  const db = engine.db();
  const ins = db.prepare('INSERT INTO sessions (id, project, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)');
  // The newest 30 sessions belong to another project; ours are older. A limit applied before the filter would return nothing.
  for (let i = 0; i < 30; i++) ins.run(`o${i}`, '/other', `other ${i}`, '2026-01-01', `2026-02-${String(10 + (i % 18)).padStart(2, '0')}T00:00:${String(i).padStart(2, '0')}Z`);
  for (let i = 0; i < 5; i++) ins.run(`m${i}`, sb.project, `mine ${i}`, '2026-01-01', `2026-01-0${i + 1}T00:00:00Z`);
  const p1 = (await call('shadow_sessions', { limit: 3 })).data;
  t.same(p1.sessions.map((s: any) => s.title), ['mine 4', 'mine 3', 'mine 2']);
  const p2 = (await call('shadow_sessions', { limit: 3, cursor: p1.next_cursor })).data;
  t.same(p2.sessions.map((s: any) => s.title), ['mine 1', 'mine 0']);
  t.equal(p2.next_cursor, null);
});
