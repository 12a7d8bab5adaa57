// Who may do what through a connection: read-only by default, writes only with
// --allow-write in a trusted project up to its level, and one project only.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { readAudit } from '../../src/store/audit.js';
import { cli, sandbox } from '../fixtures/env.js';
import { connect, structured } from '../fixtures/mcp.js';

const append = (text: string) => ({ name: 'shadow_memory', arguments: { action: 'append', text } });

t.test('a read-only server refuses writes with a tool error naming the rule', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'elevated']);
  const c = await connect(sb, 'v2-modern');
  t.teardown(() => c.close());
  const r = await c.callTool(append('x'));
  t.equal(r.isError, true);
  t.match(r.content[0].text, /^SC_POLICY_DENIED: tool:shadow_memory.append denied by write-needs-flag/);
  t.equal(structured(r).error.code, 'SC_POLICY_DENIED');
  t.same(structured(r).error.detail.reasons, ['write-needs-flag', 'write-needs-workspace-level'], 'exactly the rules that denied it');
  t.equal(structured(await c.callTool({ name: 'shadow_memory', arguments: { action: 'read' } })).content, '', 'reading still works, and nothing was written');
});

t.test('--allow-write changes nothing in an untrusted project, or one trusted only read_only', async (t) => {
  const sb = sandbox();
  const c = await connect(sb, 'v2-legacy', ['--allow-write']);
  t.teardown(() => c.close());
  t.match((await c.callTool(append('x'))).content[0].text, /write-needs-trust/);
  // The same server for both: trust is read on every call (the next test shows it), so this call is made in a project trusted read_only.
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'read_only']);
  const r = await c.callTool(append('x'));
  t.match(r.content[0].text, /denied by write-needs-workspace-level/);
  t.notMatch(r.content[0].text, /write-needs-trust/);
});

t.test('withdrawing trust takes effect on the next call of a running server', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await connect(sb, 'v2-modern', ['--allow-write']);
  t.teardown(() => c.close());
  t.notOk((await c.callTool(append('first'))).isError);
  await cli(sb, ['--project', sb.project, 'untrust']);
  t.match((await c.callTool(append('second'))).content[0].text, /write-needs-trust/);
  t.equal(structured(await c.callTool({ name: 'shadow_memory', arguments: { action: 'read' } })).content, 'first');
});

t.test("a second project's notes, goals and sessions never reach this connection", async (t) => {
  const sb = sandbox();
  const other = join(sb.root, 'other');
  mkdirSync(other);
  await cli(sb, ['--project', sb.project, 'trust']);
  await cli(sb, ['--project', other, 'trust']);
  const o = await connect(sb, 'v1', ['--allow-write'], other);
  await o.callTool(append('secret plans of the other project'));
  const goal = structured(await o.callTool({ name: 'shadow_goal', arguments: { action: 'create', title: 'other goal' } }));
  await o.close();
  const db = openDb(sb.profile, 1000);
  db.prepare("INSERT INTO sessions (id, project, title, created_at, updated_at) VALUES ('s-other', ?, 'other session', 'x', 'y')").run(other);
  db.close();

  const c = await connect(sb, 'v1', ['--allow-write']);
  t.teardown(() => c.close());
  t.equal(structured(await c.callTool({ name: 'shadow_memory', arguments: { action: 'read' } })).content, '');
  t.same(structured(await c.callTool({ name: 'shadow_goal', arguments: { action: 'list' } })).goals, []);
  const g = await c.callTool({ name: 'shadow_goal', arguments: { action: 'get', goal_id: goal.id } });
  t.match(g.content[0].text, /denied by same-project-only/, "another project's goal id is refused by policy");
  const adv = await c.callTool({ name: 'shadow_goal', arguments: { action: 'advance', goal_id: goal.id, note: 'hijack' } });
  t.equal(adv.isError, true);
  t.same(structured(await c.callTool({ name: 'shadow_sessions', arguments: {} })).sessions, []);
  const plain = JSON.stringify(await c.readResource({ uri: 'shadow://memory' })) + JSON.stringify(await c.readResource({ uri: 'shadow://sessions' }));
  t.notMatch(plain, /other project|other session/);
});

t.test('every tool call is an audited gate decision naming this connection as owner', async (t) => {
  const sb = sandbox();
  const c = await connect(sb, 'v2-modern');
  await c.callTool({ name: 'shadow_status', arguments: {} });
  await c.callTool(append('nope'));
  await c.close();
  const db = openDb(sb.profile, 1000);
  t.teardown(() => db.close());
  const rows = readAudit(db, { kinds: ['decision'], limit: 10 }).map((r) => r.body as any);
  t.equal(rows.length, 2, 'one decision per call, and no other');
  t.match(rows, [
    { action: 'tool:shadow_status', allow: true, principal: { kind: 'stdio', owner: /^stdio:\d+:[0-9a-f]{8}$/ }, project: sb.project },
    { action: 'tool:shadow_memory.append', allow: false },
  ]);
  t.same(rows[1].reasons, ['write-needs-flag', 'write-needs-trust', 'write-needs-workspace-level'], 'exactly the rules that denied it');
  t.equal(rows[0].principal.owner, rows[1].principal.owner, 'one connection, one owner');
});
