// The official clients against the real server process: the v2 client with
// modern (2026-07-28) and legacy negotiation, and the independent v1 client.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, ROOT, type Sandbox, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { hostViolations } from '../fixtures/host-rules.js';
import { connect, type Flavor, FLAVORS, type Peer, structured } from '../fixtures/mcp.js';

const TOOL_NAMES = [
  'shadow_status', 'shadow_models', 'shadow_sessions', 'shadow_tools', 'shadow_understand', 'shadow_doctor', 'shadow_memory', 'shadow_sqlite', 'shadow_goal',
  'shadow_run', 'shadow_jobs', 'shadow_approve', 'shadow_test', 'shadow_review', 'shadow_why', 'shadow_checkpoint', 'shadow_rollback',
];

/** A server with --allow-write in a trusted project. */
async function trusted(flavor: Flavor): Promise<{ sb: Sandbox; c: Peer }> {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  return { sb, c: await connect(sb, flavor, ['--allow-write']) };
}

// One v2-modern server, started once, for its discovery test and for the refused calls, which
// change nothing (that test compares the notes and goals with what was there before it).
let modern: { sb: Sandbox; c: Peer };
t.before(async () => {
  modern = await trusted('v2-modern');
});
t.teardown(() => modern.c.close());

for (const flavor of FLAVORS) {
  t.test(`${flavor}: discovery, every tool, resources and prompts`, async (t) => {
    const { sb, c } = flavor === 'v2-modern' ? modern : await trusted(flavor);
    if (c !== modern.c) t.teardown(() => c.close());
    t.equal(c.era, flavor === 'v2-modern' ? 'modern' : 'legacy', 'negotiated era');

    const { tools } = await c.listTools();
    t.same(tools.map((x) => x.name), TOOL_NAMES);
    for (const tool of tools) {
      const file = JSON.parse(readFileSync(join(ROOT, 'schemas', 'tools', `${tool.name}.schema.json`), 'utf8'));
      t.same(hostViolations(tool.inputSchema), [], `${tool.name}: the served input schema is one Claude Code and Codex accept`);
      t.same(Object.keys((tool.inputSchema as any).properties), Object.keys(file.properties ?? {}), `${tool.name}: every property of the full schema`);
      t.equal(tool.description, file.description);
    }

    const status = structured(await c.callTool({ name: 'shadow_status', arguments: {} }));
    t.match(status, { project: { path: sb.project, trusted: true, level: 'workspace' }, connection: { transport: 'stdio', allow_write: true, ceiling: 'workspace' }, engine: { mode: 'temporary' } });
    t.same(structured(await c.callTool({ name: 'shadow_models', arguments: {} })).models, [], 'no model');
    const sessions = structured(await c.callTool({ name: 'shadow_sessions', arguments: {} }));
    t.same([sessions.sessions, sessions.next_cursor], [[], null], 'no session');
    const caps = structured(await c.callTool({ name: 'shadow_tools', arguments: {} }));
    t.same(caps.resources, ['shadow://project', 'shadow://sessions', 'shadow://memory', 'shadow://plan']);
    t.ok(caps.tools.find((x: any) => x.name === 'shadow_memory').actions.every((a: any) => a.allowed), 'memory writes are allowed to this connection');
    t.match(structured(await c.callTool({ name: 'shadow_understand', arguments: {} })), { map: { project: sb.project } });
    t.match(structured(await c.callTool({ name: 'shadow_doctor', arguments: {} })), { checks: [{ id: 'profile_permissions', status: 'ok' }] });
    const appended = structured(await c.callTool({ name: 'shadow_memory', arguments: { action: 'append', text: `note from ${flavor}` } }));
    t.equal(appended.content, `note from ${flavor}`);
    const sq = await c.callTool({ name: 'shadow_sqlite', arguments: { action: 'tables', path: 'missing.db' } });
    t.equal(sq.isError, true);
    t.match(sq.content[0].text, /SC_FILE_NOT_FOUND/);
    const goal = structured(await c.callTool({ name: 'shadow_goal', arguments: { action: 'create', title: 'ship it' } }));
    t.match(goal, { title: 'ship it', state: 'open' });

    const test = structured(await c.callTool({ name: 'shadow_test', arguments: { command: ['echo', flavor] } }));
    t.match(test, { state: 'waiting_approval', approval: { cwd: sb.project } });
    t.same(test.approval.argv, ['echo', flavor], 'exactly the argv asked for');
    t.same(fields(structured(await c.callTool({ name: 'shadow_jobs', arguments: { action: 'list' } })).jobs, ['id', 'state']), [{ id: test.job_id, state: 'waiting_approval' }]);
    t.same(fields(structured(await c.callTool({ name: 'shadow_jobs', arguments: { action: 'approvals', job_id: test.job_id } })).approvals, ['id']), [{ id: test.approval.id }]);
    t.match(structured(await c.callTool({ name: 'shadow_approve', arguments: { approval_id: test.approval.id, decision: 'deny' } })), { approval: { state: 'denied' } });
    t.match(structured(await c.callTool({ name: 'shadow_jobs', arguments: { action: 'events', job_id: test.job_id } })).events, [{ kind: 'submitted' }]);
    t.same(structured(await c.callTool({ name: 'shadow_why', arguments: { path: 'README.md' } })).changes, []);
    const review = structured(await c.callTool({ name: 'shadow_review', arguments: { task_id: test.job_id } }));
    t.same([review.files, review.verification], [[], []], 'a denied test changed nothing and verified nothing');
    t.same(structured(await c.callTool({ name: 'shadow_checkpoint', arguments: { task_id: test.job_id } })).checkpoints, []);
    t.match((await c.callTool({ name: 'shadow_rollback', arguments: { task_id: test.job_id, confirm: true } })).content[0].text, /SC_FILE_NOT_FOUND: task \S+ changed no files/);

    const { resources } = await c.listResources();
    t.same(resources.map((r) => r.uri), ['shadow://project', 'shadow://sessions', 'shadow://memory', 'shadow://plan']);
    const mem = await c.readResource({ uri: 'shadow://memory' });
    t.match(JSON.parse(mem.contents[0]!.text!), { content: `note from ${flavor}` });
    t.equal((await c.readResource({ uri: 'shadow://plan' })).contents[0]!.text, 'null', 'no plan recorded yet');
    t.match(JSON.parse((await c.readResource({ uri: 'shadow://project' })).contents[0]!.text!), { path: sb.project, trusted: true });

    t.same((await c.listPrompts()).prompts.map((p) => p.name), ['delegate', 'understand']);
    const p = await c.getPrompt({ name: 'delegate', arguments: { task: 'add a changelog' } });
    t.match(p.messages[0]!.content.text, new RegExp(`project at ${sb.project}[\\s\\S]*Task: add a changelog`));
    t.match((await c.getPrompt({ name: 'understand' })).messages[0]!.content.text, /without changing anything/);
  });
}

t.test('an unknown tool and invalid arguments are errors that say so', async (t) => {
  const sb = sandbox();
  const c = await connect(sb, 'v2-modern');
  t.teardown(() => c.close());
  const unknown = await c.callTool({ name: 'shadow_nope', arguments: {} });
  t.equal(unknown.isError, true);
  t.match(unknown.content[0].text, /SC_TOOL_UNKNOWN/);
  const bad = await c.callTool({ name: 'shadow_memory', arguments: { action: 'replace', content: 'x' } });
  t.equal(bad.isError, true);
  t.match(bad.content[0].text, /SC_TOOL_ARGS_INVALID: shadow_memory arguments at \/: must have required property 'expected_hash'/);
  const extra = await c.callTool({ name: 'shadow_status', arguments: { project: '/etc' } });
  t.match(extra.content[0].text, /has unknown property "project"/, 'no tool takes a project: the project is fixed');
  await t.rejects(c.readResource({ uri: 'shadow://nope' }), /SC_TOOL_UNKNOWN/);
});

t.test('a call the full schema refuses is still refused, though the served schema cannot say why', async (t) => {
  const { c } = modern;
  const memory = async () => structured(await c.callTool({ name: 'shadow_memory', arguments: { action: 'read' } })).content;
  const goals = async () => structured(await c.callTool({ name: 'shadow_goal', arguments: { action: 'list' } })).goals;
  const before = { memory: await memory(), goals: await goals() };
  const served = new Map((await c.listTools()).tools.map((x) => [x.name, x.inputSchema as any]));
  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ['shadow_memory', { action: 'append' }, /must have required property 'text'/],
    ['shadow_memory', { action: 'read', scope: 'task' }, /must have required property 'task_id'/],
    ['shadow_checkpoint', {}, /must have required property 'checkpoint_id'/],
    ['shadow_goal', { action: 'advance', goal_id: 'g' }, /must have required property 'note'/],
    ['shadow_jobs', { action: 'cancel' }, /must have required property 'job_id'/],
    ['shadow_sqlite', { action: 'query', path: 'x.db' }, /must have required property 'sql'/],
  ];
  for (const [name, args, why] of refused) {
    const s = served.get(name);
    t.ok((s.required as string[]).every((r) => r in args), `${name} ${JSON.stringify(args)} satisfies the served schema's required list`);
    const r = await c.callTool({ name, arguments: args });
    t.equal(r.isError, true, `${name} ${JSON.stringify(args)} is refused`);
    t.match(r.content[0].text, /^SC_TOOL_ARGS_INVALID: /);
    t.match(r.content[0].text, why);
  }
  t.equal(await memory(), before.memory, 'nothing was written');
  t.same(await goals(), before.goals, 'no goal was touched');
});
