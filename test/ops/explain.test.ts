// policy explain and the gate are one evaluation: real decisions, made by the CLI, a connection and
// a task, are read back from the audit log and explained again; verdict, ceiling and rules must agree.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { explainAction } from '../../src/ops/explain.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { openDb } from '../../src/store/db.js';
import { readAudit } from '../../src/store/audit.js';
import type { Level } from '../../src/ticket.js';
import { agentBench, scripted } from '../fixtures/agent.js';
import { cli, connection, type Sandbox, sandbox } from '../fixtures/env.js';

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
  return {
    action: b.action,
    project: b.project === null ? null : { path: b.project, ...(b.trust as NonNullable<DecisionBody['trust']>) },
    ...(b.principal.kind === 'engine' ? {} : { as: b.principal.kind }),
    allowWrite: b.principal.allow_write,
    allowApprovals: b.principal.allow_approvals,
    ...(b.requested_level ? { level: b.requested_level } : {}),
    remote: b.resource?.endpoint_kind === 'remote',
    notOwn: b.resource !== undefined && b.resource.owner !== b.principal.owner,
    otherProject: b.resource?.project !== undefined && b.resource.project !== b.project,
    cliOwner: b.principal.owner,
  };
}

const ids = (rules: ReadonlyArray<{ id: string }>) => rules.map((r) => r.id);

async function realDecisions(t: Test): Promise<Array<{ sb: Sandbox; rows: DecisionBody[] }>> {
  // The person at the terminal: a test job refused in an untrusted project, run once trusted, and
  // refused to run when the project's level is below the job's.
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const ran = await cli(sb, ['--json', '--project', sb.project, 'test', '--yes', '--', 'true']);
  t.equal(ran.code, 0, 'the test job ran in the trusted project');
  const jobId = JSON.parse(ran.stdout).job.id as string;
  // A connection: reads, a write with and without its flag, a task above its level, another owner's job, a test job.
  const reader = await connection(sb);
  await reader.call('shadow_status');
  await reader.call('shadow_memory', { action: 'append', scope: 'project', text: 'note' });
  await reader.call('shadow_run', { prompt: 'x', mode: 'build', permission_level: 'workspace' });
  await reader.call('shadow_jobs', { action: 'events', job_id: jobId });
  await reader.close();
  const writer = await connection(sb, { allowWrite: true });
  await writer.call('shadow_memory', { action: 'append', scope: 'project', text: 'note' });
  await writer.call('shadow_test', { command: ['true'] });
  await writer.close();
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'read_only']);
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  await cli(sb, ['--project', sb.project, 'untrust']);

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
  return [sb, b.sb, far.sb].map((s) => ({ sb: s, rows: decisions(s.profile) }));
}

t.test('every recorded decision, explained again from its row, gets the gate\'s verdict, ceiling and rules', async (t) => {
  const all = (await realDecisions(t)).flatMap((p) => p.rows);
  const policy = shippedPolicy();
  for (const b of all) {
    t.ok(b.project === null || b.trust, `${b.action}: the row keeps the trust the decision saw`);
    const e = explainAction(policy, queryOf(b));
    t.same(
      { allow: e.allow, ceiling: e.ceiling, rules: ids(e.rules) },
      { allow: b.allow, ceiling: b.ceiling, rules: b.reasons },
      `${b.action} by ${b.principal.kind}${b.requested_level ? ` at ${b.requested_level}` : ''}: ${b.allow ? 'ALLOW' : 'DENY'} ${b.reasons.join(', ')}`,
    );
  }
  // The replay covers what the issue found apart and the families of work.
  const seen = (action: string, allow: boolean) => all.some((b) => b.action === action && b.allow === allow);
  for (const [action, allow] of [
    ['engine:submit', false], ['engine:submit', true], ['job:run', true], ['job:run', false], ['cli:test', true],
    ['tool:shadow_memory.append', false], ['tool:shadow_memory.append', true], ['tool:shadow_run', false], ['tool:shadow_jobs.events', false],
    ['task:tool.write_file', true], ['task:tool.write_file', false], ['file:write', true], ['model:request', true], ['model:request', false],
  ] as const) t.ok(seen(action, allow), `replayed a real ${allow ? 'allowed' : 'denied'} ${action}`);
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
