import t from 'tap';
import { cli, connection, sandbox } from '../fixtures/env.js';

t.test('a goal is created, advanced, completed, and then closed to changes', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const { call, close } = await connection(sb, { allowWrite: true });
  t.teardown(close);
  const g = (await call('shadow_goal', { action: 'create', title: 'release 1.0', description: 'cut it' })).data;
  t.match(g, { title: 'release 1.0', description: 'cut it', state: 'open' });
  t.same(g.steps, [], 'a new goal has no steps');
  await call('shadow_goal', { action: 'advance', goal_id: g.id, note: 'wrote changelog' });
  const done = (await call('shadow_goal', { action: 'advance', goal_id: g.id, note: 'tagged', complete: true })).data;
  t.equal(done.state, 'done');
  t.same(done.steps.map((s: any) => [s.kind, s.note]), [['advance', 'wrote changelog'], ['complete', 'tagged']]);
  const again = await call('shadow_goal', { action: 'abandon', goal_id: g.id, note: 'too late' });
  t.equal(again.data.error.code, 'SC_GOAL_CLOSED');
  t.equal((await call('shadow_goal', { action: 'get', goal_id: 'goal_none' })).data.error.code, 'SC_GOAL_NOT_FOUND');
});

t.test('goals list in pages, filtered by state', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const { call, close } = await connection(sb, { allowWrite: true });
  t.teardown(close);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await call('shadow_goal', { action: 'create', title: `g${i}` })).data.id);
  await call('shadow_goal', { action: 'abandon', goal_id: ids[1], note: 'no' });
  const p1 = (await call('shadow_goal', { action: 'list', limit: 2 })).data;
  t.same(p1.goals.map((g: any) => g.title), ['g0', 'g1']);
  const p2 = (await call('shadow_goal', { action: 'list', limit: 2, cursor: p1.next_cursor })).data;
  t.same(p2.goals.map((g: any) => g.title), ['g2', 'g3']);
  const p3 = (await call('shadow_goal', { action: 'list', limit: 2, cursor: p2.next_cursor })).data;
  t.same(p3.goals.map((g: any) => g.title), ['g4']);
  t.equal(p3.next_cursor, null);
  t.same((await call('shadow_goal', { action: 'list', state: 'abandoned' })).data.goals.map((g: any) => g.title), ['g1']);
  t.equal((await call('shadow_goal', { action: 'list', cursor: 'garbage' })).data.error.code, 'SC_CURSOR_INVALID');
});

t.test('creating a goal needs write access, listing does not', async (t) => {
  const sb = sandbox();
  const { call, close } = await connection(sb);
  t.teardown(close);
  t.match((await call('shadow_goal', { action: 'create', title: 'x' })).text, /SC_POLICY_DENIED/);
  t.same((await call('shadow_goal', { action: 'list' })).data.goals, []);
});
