// policy explain and the gate are one evaluation: real decisions of every family the audit log
// holds (the CLI, a stdio connection, the HTTP gateway, a task's tools, writes and model, a test
// job and what it changed, a background process, a coding-CLI runner, an external server's
// connect and call, a sandboxed command's proxied connection, the shared engine's socket) are
// read back from the audit log and explained again, from the options a person would give
// `policy explain ACTION` and from `policy explain --decision ID`; verdict, ceiling and rules
// must be the gate's.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { createRunner } from '../../src/agent/runners/index.js';
import { explainAction, explainDecision } from '../../src/ops/explain.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { cliPrincipal } from '../../src/policy/requests.js';
import { openDb } from '../../src/store/db.js';
import { readAudit } from '../../src/store/audit.js';
import type { Level } from '../../src/ticket.js';
import { agentBench, scripted } from '../fixtures/agent.js';
import { call, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { cli, connection, type Sandbox, sandbox, spawnCli, until } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { httpClient, INIT_BODY, JSON_HEADERS, raw, startGateway } from '../fixtures/http.js';
import { grant, peerDef, world } from '../fixtures/mcp-client.js';
import { FIXTURES, runnerProject } from '../fixtures/runner-task.js';

interface DecisionBody {
  decision_id: string;
  action: string;
  principal: GateRequest['principal'];
  project: string | null;
  trust?: { trusted: boolean; level: Level; network?: boolean };
  requested_level?: Level;
  resource?: GateRequest['resource'];
  allow: boolean;
  reasons: string[];
  ceiling: Level;
}

function decisions(profile: string): DecisionBody[] {
  const db = openDb(profile, 5000);
  try {
    return readAudit(db, { kinds: ['decision'], limit: 100000 }).map((r) => r.body as DecisionBody);
  } finally {
    db.close();
  }
}

/** The options a person would give `policy explain` to ask about this decision, read off its row. */
function queryOf(b: DecisionBody) {
  const r = b.resource;
  return {
    action: b.action,
    project: b.project === null ? null : { path: b.project, ...(b.trust as NonNullable<DecisionBody['trust']>) },
    ...(b.principal.kind === 'engine' ? {} : { as: b.principal.kind }),
    allowWrite: b.principal.allow_write,
    allowApprovals: b.principal.allow_approvals,
    ...(b.requested_level ? { level: b.requested_level } : {}),
    remote: r?.endpoint_kind === 'remote',
    notOwn: r !== undefined && r.owner !== b.principal.owner,
    otherProject: r?.project !== undefined && r.project !== b.project,
    cliOwner: b.principal.owner,
    // --host: the host asked for, and what the proxy found of it (a grant; a name resolving inward).
    ...(b.action === 'net:connect' && r ? { net: { id: r.id as string, host: r.host as string, port: r.port as number, granted: r.granted === true, inward: r.private_address === true } } : {}),
  };
}

const ids = (rules: ReadonlyArray<{ id: string }>) => rules.map((r) => r.id);
const verdict = (b: DecisionBody) => ({ allow: b.allow, ceiling: b.ceiling, rules: b.reasons });
const label = (b: DecisionBody) => `${b.action} by ${b.principal.kind}${b.requested_level ? ` at ${b.requested_level}` : ''}: ${b.allow ? 'ALLOW' : 'DENY'} ${b.reasons.join(', ')}`;

/**
 * Every decision recorded in `sb`'s profile, explained again two ways: as `policy explain ACTION`
 * builds the request (the same builders the operations call), and as `policy explain --decision ID`
 * rebuilds it from its row. Both must give the gate's verdict, ceiling and rules. One decision per
 * action also goes through the real command line. Returns the rows, for the caller's coverage checks.
 */
async function replay(t: Test, sb: Sandbox): Promise<DecisionBody[]> {
  const rows = decisions(sb.profile);
  const policy = shippedPolicy();
  for (const b of rows) {
    t.ok(b.project === null || b.trust, `${b.action}: the row keeps the trust the decision saw`);
    const e = explainAction(policy, queryOf(b));
    t.same({ allow: e.allow, ceiling: e.ceiling, rules: ids(e.rules) }, verdict(b), `explain ACTION, ${label(b)}`);
    t.equal(e.request.principal.kind, b.principal.kind, `${b.action}: asked by the same kind of principal`);
    // A command's record is its own business (no rule of cli: reads one); every other request names the record its operation names.
    // A record that does not exist has no owner; explain asks about it as another owner's (--not-own), which the rules treat alike.
    const shape = (r: GateRequest['resource'], missing: boolean) => Object.keys(r ?? {}).filter((k) => !(missing && k === 'owner')).sort();
    const missing = b.resource !== undefined && b.resource.owner === undefined && e.request.resource?.owner === '(another owner)';
    if (!b.action.startsWith('cli:')) t.same(shape(e.request.resource, missing), shape(b.resource, missing), `${b.action}: the request names a record of the same shape`);
  }
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const gate = { policy, db: () => db };
  const caller = { principal: cliPrincipal('cli'), project: null };
  for (const b of rows) {
    const d = await explainDecision(gate, caller, b.decision_id);
    t.same({ allow: d.allow, ceiling: d.ceiling, rules: ids(d.rules) }, verdict(b), `explain --decision, ${label(b)}`);
    t.ok(d.request && d.now, `${b.action}: its request is rebuilt from the row and decided again`);
    if (d.now) t.same({ allow: d.now.allow, ceiling: d.now.ceiling, rules: ids(d.now.rules) }, verdict(b), `${b.action}: decided again now, the same`);
  }
  const firstOf = new Map<string, DecisionBody>();
  for (const b of rows) if (!firstOf.has(`${b.action} ${b.allow}`)) firstOf.set(`${b.action} ${b.allow}`, b);
  for (const b of firstOf.values()) {
    const r = await cli(sb, ['--json', 'policy', 'explain', '--decision', b.decision_id]);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout), { decision_id: b.decision_id, action: b.action, allow: b.allow, request: { principal: { kind: b.principal.kind } }, now: { allow: b.allow } }, `shadowcode policy explain --decision for ${label(b)}`);
  }
  return rows;
}

function seenAll(t: Test, rows: readonly DecisionBody[], wanted: ReadonlyArray<readonly [string, boolean]>): void {
  for (const [action, allow] of wanted) t.ok(rows.some((b) => b.action === action && b.allow === allow), `replayed a real ${allow ? 'allowed' : 'denied'} ${action}`);
}

t.test('the command line, a stdio connection, a task and the shared engine: every decision explained again gets the gate\'s verdict, ceiling and rules', async (t) => {
  // The person at the terminal: a test job refused in an untrusted project, run once trusted, and
  // refused to run when the project's level is below the job's.
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const ran = await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'true']);
  t.equal(ran.code, 0, 'the test job ran in the trusted project');
  const jobId = JSON.parse(ran.stdout).job.id as string;
  // A connection: reads, a write with and without its flag, a task above its level, another owner's
  // job, approval and task, goals, a test job.
  const reader = await connection(sb);
  await reader.call('shadow_status');
  await reader.call('shadow_memory', { action: 'append', scope: 'project', text: 'note' });
  await reader.call('shadow_run', { prompt: 'x', mode: 'build', permission_level: 'workspace' });
  await reader.call('shadow_jobs', { action: 'events', job_id: jobId });
  await reader.call('shadow_review', { task_id: jobId });
  await reader.call('shadow_rollback', { task_id: jobId, confirm: true });
  await reader.call('shadow_goal', { action: 'list' });
  const writer = await connection(sb, { allowWrite: true, allowApprovals: true });
  await writer.call('shadow_memory', { action: 'append', scope: 'project', text: 'note' });
  const pending = await writer.call('shadow_test', { command: ['true'] });
  await writer.call('shadow_jobs', { action: 'cancel', job_id: jobId });
  await writer.call('shadow_rollback', { task_id: jobId, confirm: true });
  const other = await connection(sb, { allowWrite: true, allowApprovals: true });
  // Another connection's approval, and one that does not exist: neither is this one's to decide.
  await other.call('shadow_approve', { approval_id: pending.data.approval.id, decision: 'approve' });
  await other.call('shadow_approve', { approval_id: 'appr_nope', decision: 'deny' });
  await writer.call('shadow_approve', { approval_id: pending.data.approval.id, decision: 'deny' });
  await Promise.all([reader.close(), writer.close(), other.close()]);
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'read_only']);
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  // The shared engine: the command line opens its socket (engine:connect) for status and stop.
  const started = await spawnCli(sb, ['--json', 'engine', 'start']);
  t.equal(started.code, 0, started.stderr);
  const pid = JSON.parse(started.stdout).engine?.pid as number | undefined;
  t.teardown(() => {
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  t.equal((await cli(sb, ['engine', 'status'])).code, 0);
  t.equal((await cli(sb, ['engine', 'stop'])).code, 0);
  await cli(sb, ['--project', sb.project, 'untrust']);
  const rows = await replay(t, sb);
  seenAll(t, rows, [
    ['engine:submit', false], ['engine:submit', true], ['job:run', true], ['job:run', false], ['job:observe', true], ['cli:test', true], ['engine:connect', true],
    ['tool:shadow_memory.append', false], ['tool:shadow_memory.append', true], ['tool:shadow_run', false], ['tool:shadow_jobs.events', false],
    ['tool:shadow_review', true], ['tool:shadow_jobs.cancel', false], ['tool:shadow_approve.approve', false], ['tool:shadow_approve.deny', false], ['tool:shadow_approve.deny', true],
    ['tool:shadow_rollback', true], ['tool:shadow_rollback', false], ['tool:shadow_goal.list', true],
  ]);
});

t.test("a task's tools, writes and model, at workspace and read_only, near and remote: explained again, the gate's verdicts", async (t) => {
  // A task: its tools, its write, its model; at workspace, and at read_only where writing is refused.
  const model = () => scripted([{ calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'new' } }] }, { calls: [{ name: 'finish', arguments: { summary: 'done' } }] }]);
  const b = await agentBench(model);
  writeFileSync(join(b.sb.project, 'a.txt'), 'old');
  await b.settle(b.submit('write a').id);
  await b.settle(b.submit('try to write a', { ceiling: 'read_only' }).id);
  await b.close();
  // A remote model from a project without network permission.
  const far = await agentBench(() => scripted([{ text: 'never asked' }], { remote: true }));
  await far.settle(far.submit('ask a remote model').id);
  await far.close();
  const rows = [...(await replay(t, b.sb)), ...(await replay(t, far.sb))];
  seenAll(t, rows, [['task:tool.write_file', true], ['task:tool.write_file', false], ['file:write', true], ['model:request', true], ['model:request', false], ['job:observe', true]]);
});

t.test('a background process started and stopped by a writing task, refused to a read-only one: explained again', async (t) => {
  const b = await agentBench(() => scripted([{ text: 'unused' }]));
  t.teardown(() => b.close());
  const jobs = b.engine.jobs();
  const owner = `stdio:${process.pid}:bg`;
  const writer = jobs.submitTest(owner, b.sb.project, ['true'], 'workspace', null).job;
  const reader = jobs.submitTest(owner, b.sb.project, ['true'], 'read_only', null).job;
  const bg = b.engine.background();
  await t.rejects(bg.start(reader, ['sleep', '60']), { code: 'SC_POLICY_DENIED' }, 'a read-only task cannot start one');
  const entry = await bg.start(writer, ['sh', '-c', 'sleep 60 & wait']);
  await t.rejects(bg.stop(entry.id, reader), { code: 'SC_POLICY_DENIED' }, 'nor stop one');
  await bg.stop(entry.id, writer);
  const rows = await replay(t, b.sb);
  seenAll(t, rows, [['background:start', true], ['background:start', false], ['background:stop', true], ['background:stop', false]]);
});

t.test('the HTTP gateway, a task it delegates and the external server that task connects to and calls: explained again', async (t) => {
  const w = await world();
  t.teardown(() => w.db.close());
  // mcp enable reads the catalog for your review: mcp:connect asked by you at the command line.
  const g = await grant(w, 'peer', peerDef('ok'));
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'p1', name: 'mcp__peer__echo', arguments: JSON.stringify({ text: 'hello' }) }], finish: 'tool_calls' },
      { tool_calls: [{ id: 'p2', name: 'finish', arguments: JSON.stringify({ summary: 'echoed' }) }], finish: 'tool_calls' },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(w.sb, 'openai', fake.url);
  const gw = await startGateway(w.sb, ['--allow-write', '--allow-approvals']);
  t.teardown(() => gw.stop());
  const c = await httpClient(gw.url, 'v2-modern');
  t.teardown(() => c.close());
  await call(c, 'shadow_status');
  await c.readResource({ uri: 'shadow://project' });
  await (c as unknown as { getPrompt(p: { name: string }): Promise<unknown> }).getPrompt({ name: 'understand' });
  const started = await call(c, 'shadow_run', { prompt: 'echo through the server', mode: 'build', permission_level: 'workspace' });
  const stop = await nextStop(c, started.job_id, 30000);
  t.equal(stop.approvals[0]?.kind, 'mcp_call', 'the external call waits for its approval');
  await call(c, 'shadow_approve', { approval_id: stop.approvals[0].id, decision: 'approve' });
  const end = await nextStop(c, started.job_id, 30000);
  t.match(end.answer, { state: 'succeeded' });
  // The gateway's guards refuse a request without the token: a denied http:refused.
  t.equal((await raw(gw.port, { headers: JSON_HEADERS, body: INIT_BODY })).status, 401);
  await until(() => decisions(w.sb.profile).some((b) => b.action === 'http:refused'));
  const rows = await replay(t, w.sb);
  seenAll(t, rows, [
    ['http:request', true], ['http:refused', false], ['tool:shadow_status', true], ['resource:shadow://project', true], ['prompt:understand', true], ['tool:shadow_run', true], ['tool:shadow_approve.approve', true], ['engine:submit', true],
    ['model:request', true], ['mcp:connect', true], ['mcp:call', true], ['cli:mcp.enable', true],
  ]);
  t.ok(rows.some((b) => b.action === 'mcp:connect' && b.principal.kind === 'cli'), 'your review of the catalog, at mcp enable');
  t.ok(rows.some((b) => b.action === 'mcp:connect' && b.principal.kind === 'engine'), "and the task's own connection");
  t.ok(rows.some((b) => b.action === 'tool:shadow_status' && b.principal.kind === 'http'), 'a tool call through the gateway');
  t.ok(g.id);
  // Asked as a person would, without --as: an http: action is the gateway's.
  const asked = JSON.parse((await cli(w.sb, ['--json', '--project', w.sb.project, 'policy', 'explain', 'http:request'])).stdout);
  t.match(asked, { allow: true, rules: [{ id: 'http-request' }], request: { principal: { kind: 'http' } } }, 'policy explain http:request is the HTTP gateway asking');
});

t.test('a coding-CLI runner, with a shared external server it calls through the relay, and one refused in an untrusted project: explained again', async (t) => {
  const h = await runnerProject(t);
  const file = join(h.sb.root, 'tools.json');
  writeFileSync(file, JSON.stringify({ name: 'tools', command: [process.execPath, join(FIXTURES, 'mcp-peer.mjs'), 'ok'] }));
  const add = JSON.parse((await cli(h.sb, ['--json', 'mcp', 'add', file])).stdout);
  t.equal((await cli(h.sb, ['--project', h.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(join(h.sb.root, '.claude'));
  const record = join(h.sb.root, '.claude', 'record.json');
  const policy = shippedPolicy();
  const runner = (db: typeof h.db, c: typeof h.c) =>
    createRunner(
      { id: 'cc', provider: 'claude-code', model: 'default', command: join(FIXTURES, 'fake-claude.mjs'), args: ['--fake-scenario', 'mcp', '--fake-record', record, '--fake-mcp', 'tools/echo', '--fake-mcp-args', JSON.stringify({ text: 'hi' })] },
      { env: h.sb.env, secrets: c.engine.secrets(), policy, db, gateEnv: { policy, db: () => db } },
    );
  const { ctx, approvals } = h.task({ mode: 'build', ceiling: 'workspace' });
  const out = await runner(h.db, h.c).run(ctx);
  t.equal(out.state, 'succeeded', JSON.stringify(out));
  t.same(approvals.map((a) => a.kind), ['mcp_call'], 'the call through the relay was approved');
  const untrusted = await runnerProject(t, { trust: null });
  const refused = await runner(untrusted.db, untrusted.c).run(untrusted.task({ mode: 'build', ceiling: 'workspace' }).ctx);
  t.equal(refused.state, 'failed', 'no runner starts in an untrusted project');
  const rows = [...(await replay(t, h.sb)), ...(await replay(t, untrusted.sb))];
  seenAll(t, rows, [['runner:spawn', true], ['runner:spawn', false], ['mcp:connect', true], ['mcp:call', true], ['cli:mcp.add', true]]);
});

t.test("a sandboxed test command's connections through the proxy, to a granted host and to one no grant names: explained again", async (t) => {
  const sb = sandbox('scn');
  await cli(sb, ['--project', sb.project, 'trust']);
  const server: Server = createServer((_q, s) => s.end('hello\n'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = (server.address() as { port: number }).port;
  t.equal((await cli(sb, ['--project', sb.project, 'sandbox', 'allow', '--net', `localhost:${port}`])).code, 0);
  const script = `curl -sS --noproxy '' http://localhost:${port}/ok; curl -sS http://denied.example.invalid/x; true`;
  const r = await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'sh', '-c', script]);
  t.equal(r.code, 0, r.stderr);
  const rows = await replay(t, sb);
  seenAll(t, rows, [['net:connect', true], ['net:connect', false], ['cli:sandbox.allow', true], ['job:run', true], ['job:observe', true]]);
  // Asked as a person would: the grant is read from the profile, as the proxy reads it.
  const asked = async (host: string) => JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'policy', 'explain', 'net:connect', '--host', host])).stdout);
  t.match(await asked(`localhost:${port}`), { allow: true, rules: [{ id: 'net-granted-host' }], request: { principal: { kind: 'engine' }, resource: { kind: 'net_host', granted: true } } });
  t.match(await asked('denied.example.invalid:80'), { allow: false, rules: [{ id: 'net-host-not-granted' }] });
  t.match(await asked(`localhost:${port + 1 > 65535 ? port - 1 : port + 1}`), { allow: false }, 'a grant names its port');
});

t.test('a refused test job: the error line, policy explain --decision and policy explain ACTION name the same rule', async (t) => {
  const sb = sandbox();
  const refused = await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  t.equal(refused.code, 3);
  const line = /denied by ([\w-]+) .*why: shadowcode policy explain --decision ([0-9a-f-]{36}) \[SC_POLICY_DENIED\]\n$/.exec(refused.stderr);
  t.ok(line, `the error line names the rule and its decision: ${refused.stderr}`);
  const [, rule, id] = line ?? [];
  t.equal(rule, 'engine-writing-work-needs-trust');
  const json = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'true'])).stdout);
  t.match(json.error, { code: 'SC_POLICY_DENIED', decision_id: /^[0-9a-f-]{36}$/ }, '--json carries the decision id');
  const byId = JSON.parse((await cli(sb, ['--json', 'policy', 'explain', '--decision', id as string])).stdout);
  t.match(byId, { decision_id: id, action: 'engine:submit', allow: false, policy_changed: false, policy_hash: shippedPolicy().hash, request: { principal: { kind: 'cli' }, project: { path: sb.project, trusted: false }, requested_level: 'workspace' } });
  t.same(ids(byId.rules), [rule]);
  t.same(ids(byId.now.rules), [rule], 'decided again now, the same');
  const text = await cli(sb, ['policy', 'explain', '--decision', id as string]);
  t.match(text.stdout, new RegExp(`^DENY engine:submit \\(ceiling read_only\\), decision ${id} at .*\\n {2}forbid engine-writing-work-needs-trust: .*\\nrequest:\\n {2}who: you at the command line .*\\n {2}project: ${sb.project}, not trusted\\n {2}requested level: workspace\\n`));
  t.match(text.stdout, /\npolicy: [0-9a-f]{64} \(the policy in force now\)\n$/);
  const asked = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'policy', 'explain', 'engine:submit'])).stdout);
  t.match(asked, { allow: false, rules: [{ id: rule }] }, 'policy explain ACTION in the same project: the same rule');

  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  t.equal((await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true'])).code, 0, 'trusted, the job runs');
  for (const action of ['engine:submit', 'job:run']) {
    const ok = await cli(sb, ['--project', sb.project, 'policy', 'explain', action]);
    t.match(ok.stdout, new RegExp(`^ALLOW ${action} \\(ceiling workspace\\)\\n`), `and policy explain ${action} says ALLOW`);
  }
  const missing = await cli(sb, ['policy', 'explain', '--decision', 'nope']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no decision "nope" .*\[SC_AUDIT_NOT_FOUND\]/);
});

t.test('a decision made under another policy says so, and is decided again under the one in force now', async (t) => {
  const sb = sandbox();
  const refused = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'true'])).stdout);
  const { Ctx } = await import('../../src/cli/context.js');
  const { explainDecision } = await import('../../src/ops/explain.js');
  // The policy of an embedding host, as the library loads it: same rules, another hash.
  const base = shippedPolicy();
  const other = { ...base, hash: 'f'.repeat(64) };
  const ctx = new Ctx({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: sb.env, cwd: sb.root }, { json: false, help: false, version: false }, { policy: other, owner: 'host:test' });
  t.teardown(() => ctx.close());
  const { action: _a, ...caller } = ctx.request('cli:audit.read');
  const d = await explainDecision(ctx.gate(), caller, refused.error.decision_id);
  t.match(d, { policy_changed: true, policy_hash: base.hash, current_policy_hash: 'f'.repeat(64), allow: false, now: { allow: false } });
});

t.test('a tool refusal carries its decision id in the MCP error, text and structured content', async (t) => {
  const sb = sandbox();
  const c = await connection(sb);
  t.teardown(() => c.close());
  const r = await c.call('shadow_memory', { action: 'append', scope: 'project', text: 'x' });
  t.equal(r.isError, true);
  t.match(r.data, { error: { code: 'SC_POLICY_DENIED', decision_id: /^[0-9a-f-]{36}$/ } });
  t.match(r.text, new RegExp(`\\(decision ${r.data.error.decision_id}: shadowcode policy explain --decision ${r.data.error.decision_id}\\)$`));
});
