// An ACP agent as a task runner, against a stand-in built on the official ACP SDK's
// agent side: the JSON-RPC handshake and the servers it is given, permission
// requests as exact approvals ("once" options only), updates as job events,
// checkpoints and rollback of its edit, read-only tasks, and session/cancel.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createRunner } from '../../../src/agent/runners/index.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { cli, pidsOf, ROOT } from '../../fixtures/env.js';
import { fields } from '../../fixtures/exact.js';
import { PEER } from '../../fixtures/mcp-client.js';
import { httpPeer } from '../../fixtures/mcp-http-peer.js';
import { alive, FIXTURES, gone, runnerProject } from '../../fixtures/runner-task.js';

const AGENT = join(FIXTURES, 'fake-acp-agent.mjs');
const shipped = shippedPolicy();
// An ACP agent has no usual state folder: this one's is listed under its own command name, as a user would list theirs.
const policy = { ...shipped, sandbox: { ...shipped.sandbox, tool_state: { ...shipped.sandbox.tool_state, 'fake-acp-agent.mjs': ['~/.fake-acp'] } } };

async function setup(t: any, scenario = 'edit') {
  const h = await runnerProject(t);
  mkdirSync(join(h.sb.project, 'src'));
  writeFileSync(join(h.sb.project, 'src', 'app.txt'), 'hello world\n');
  mkdirSync(join(h.sb.root, '.fake-acp'));
  const record = join(h.sb.root, '.fake-acp', 'acp-record.json');
  const runner = createRunner({ id: 'agent', provider: 'acp', model: 'default', command: AGENT, args: ['--fake-scenario', scenario, '--fake-record', record] }, { env: h.sb.env, secrets: h.c.engine.secrets(), policy, db: h.db, gateEnv: { policy, db: () => h.db } });
  return { ...h, record, runner, recorded: () => JSON.parse(readFileSync(record, 'utf8')) };
}

t.test('speaks ACP over stdio: initialize, session/new with the shared servers, a prompt, an exact approval', async (t) => {
  const s = await setup(t);
  // A Streamable HTTP server in this process (the real wire format): only its URL matters here.
  const http = await httpPeer('ok');
  t.teardown(() => http.close());
  const url = http.url;
  const tools = `name: tools\ncommand: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "ok"]\n`;
  for (const [name, text] of Object.entries({ tools, web: `name: web\nurl: ${url}\n`, lit: 'name: lit\ncommand: ["/opt/l"]\nenv:\n  X: canary-acp-literal-3e\n' })) {
    const file = join(s.sb.root, `${name}.yaml`);
    writeFileSync(file, text);
    const add = JSON.parse((await cli(s.sb, ['--json', 'mcp', 'add', file])).stdout);
    t.equal((await cli(s.sb, ['--project', s.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  }
  const { ctx, events, approvals, jobId } = s.task({ mode: 'build', ceiling: 'workspace' });
  const out = await s.runner.run(ctx);
  t.match(out, { state: 'succeeded', summary: 'Looking at src/app.txt. Changed hello to goodbye.' });
  const r = s.recorded();
  t.same(r.argv, ['--fake-scenario', 'edit', '--fake-record', s.record], 'only the fixed arguments');
  t.equal(r.cwd, s.sb.project);
  t.match(r.initialize, { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }, clientInfo: { name: 'shadowcode' } });
  const relay = join(ROOT, 'dist', 'mcp-relay.js');
  const entry = (name: string) => ({ name, command: process.execPath, args: [relay, '--server', name], env: [{ name: 'SHADOWCODE_RELAY_SOCKET', value: /relay\.sock$/ }, { name: 'SHADOWCODE_RELAY_TOKEN', value: /^[0-9a-f]{64}$/ }] });
  t.equal(r.session_new.cwd, s.sb.project);
  t.matchOnly(fields(r.session_new.mcpServers, ['name', 'command', 'args', 'env']), [entry('tools'), entry('web')], 'our relay for each usable server, HTTP ones included, with exactly its arguments and variables');
  t.equal(r.session_new.mcpServers.length, 2, 'the server that cannot be reached is withheld');
  t.notMatch(JSON.stringify(r.session_new), /canary|mcp-peer|\/mcp"/, "no granted server's command, URL or literal env");
  t.same(approvals.map((a) => [a.kind, a.action.path, a.action.tool_kind]), [['write', 'src/app.txt', 'edit']]);
  t.same(r.outcomes, [{ outcome: 'selected', optionId: 'allow' }], 'allow_once, never allow_always');
  t.match(events.find((e) => e.kind === 'runner.started')!.body, { provider: 'acp', sandbox: 'bwrap', label: 'sandboxed' }, 'the agent runs in the sandbox');
  t.same(events.filter((e) => e.kind === 'tool_call').map((e) => e.body.id), ['call_1']);
  t.match(events.find((e) => e.kind === 'tool_result')!.body, { id: 'call_1', is_error: false, content: 'edited' });
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'goodbye world\n');
  t.same(fields((await s.c.call('shadow_review', { task_id: jobId })).data.files, ['path', 'status']), [{ path: 'src/app.txt', status: 'modified' }]);
  t.equal((await s.c.call('shadow_rollback', { task_id: jobId, confirm: true })).isError, false);
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n');
});

t.test('a denied approval selects reject_once', async (t) => {
  const s = await setup(t);
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace', decide: () => 'denied' });
  t.equal((await s.runner.run(ctx)).state, 'succeeded');
  t.same(s.recorded().outcomes, [{ outcome: 'selected', optionId: 'reject' }]);
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n');
});

t.test('a read-only task rejects permission requests without asking and passes no servers', async (t) => {
  const s = await setup(t);
  const file = join(s.sb.root, 'tools.yaml');
  writeFileSync(file, 'name: tools\ncommand: ["/opt/t/bin/srv"]\n');
  const add = JSON.parse((await cli(s.sb, ['--json', 'mcp', 'add', file])).stdout);
  await cli(s.sb, ['--project', s.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash]);
  const { ctx, approvals } = s.task({ mode: 'review', ceiling: 'workspace' });
  t.equal((await s.runner.run(ctx)).state, 'succeeded');
  t.same(approvals, []);
  t.same(s.recorded().outcomes, [{ outcome: 'selected', optionId: 'reject' }]);
  t.same(s.recorded().session_new.mcpServers, []);
});

t.test('a refusal stop reason fails the task with SC_RUNNER_FAILED', async (t) => {
  const s = await setup(t, 'refuse');
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.match(await s.runner.run(ctx), { state: 'failed', reason: { code: 'SC_RUNNER_FAILED', message: /refusal/ } });
});

t.test('cancelling sends session/cancel, answers the pending permission, and leaves no agent process', async (t) => {
  const s = await setup(t, 'hang');
  const { ctx, controller, approvals, when } = s.task({ mode: 'build', ceiling: 'workspace', decide: () => 'wait' });
  const running = s.runner.run(ctx);
  await when(() => approvals.length > 0);
  t.equal(s.recorded().children.length, 1, 'the agent started a descendant');
  const pids = pidsOf(`${s.record}.pids`);
  t.equal(pids.filter(alive).length, 2, 'the agent and its descendant, found by their host pids');
  controller.abort();
  t.equal((await running).state, 'cancelled');
  t.same(await gone(pids), [], 'no agent process is left');
  t.equal(s.recorded().cancelled, true, 'the agent got session/cancel');
});
