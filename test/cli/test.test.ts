import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readAudit } from '../../src/store/audit.js';
import { openDb, sql } from '../../src/store/db.js';
import { cli, sandbox } from '../fixtures/env.js';

const project = (script: string) => {
  const sb = sandbox();
  writeFileSync(join(sb.project, 'package.json'), JSON.stringify({ scripts: { test: script } }));
  return sb;
};
const ws = (sb: { project: string }) => ['--project', sb.project];

t.test('refuses to run in an untrusted project, naming the rule and the command that fixes it', async (t) => {
  const sb = project('echo ran');
  const r = await cli(sb, [...ws(sb), 'test', '--yes']);
  t.equal(r.code, 3);
  t.match(r.stderr, /did not run: [a-z:]+ denied by engine-[a-z-]*needs-trust/);
  t.match(r.stderr, new RegExp(`trust the project first: shadowcode --project ${sb.project} trust; why: shadowcode policy explain --decision [0-9a-f-]{36} \\[SC_POLICY_DENIED\\]`));
  t.notMatch(r.stdout, /ran/, 'nothing ran');
  const j = await cli(sb, ['--json', ...ws(sb), 'test', '--yes']);
  t.equal(JSON.parse(j.stdout).error.code, 'SC_POLICY_DENIED');
  t.match(JSON.parse(j.stdout).error, { decision_id: /./, detail: { reasons: [/needs-trust/] } });
});

t.test("--yes is the CLI user's decision on that one approval, recorded by the gate before the command starts", async (t) => {
  const sb = project('true');
  await cli(sb, [...ws(sb), 'trust']);
  const j = JSON.parse((await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'true'])).stdout);
  t.equal(j.passed, true);
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const approvals = sql(db, 'SELECT id, state, decided_by FROM approvals WHERE job_id = ?').all(j.job.id) as Array<{ id: string; state: string; decided_by: string }>;
  t.same(approvals.map((a) => [a.state, a.decided_by]), [['approved', 'cli']], 'its one approval, approved by the CLI user');
  const rows = readAudit(db, { limit: 1000 });
  const decisions = rows.filter((r) => r.kind === 'decision' && (r.body as { action: string }).action === 'cli:approvals.approve');
  t.same(decisions.map((r) => { const b = r.body as { allow: boolean; resource: unknown }; return { allow: b.allow, resource: b.resource }; }), [{ allow: true, resource: { kind: 'approval', id: approvals[0]!.id, project: sb.project } }], 'one gate decision, naming that approval');
  const spawn = rows.find((r) => r.kind === 'spawn');
  t.ok(spawn && spawn.seq > decisions[0]!.seq, 'the command started after the decision was recorded');
});

t.test('a job refused when it is about to run names the decision that refused it, which explains it', async (t) => {
  const sb = project('echo ran');
  await cli(sb, [...ws(sb), 'trust', '--level', 'read_only']);
  const r = await cli(sb, [...ws(sb), 'test', '--yes']);
  t.equal(r.code, 3);
  const id = /why: shadowcode policy explain --decision ([0-9a-f-]{36}) \[SC_POLICY_DENIED\]/.exec(r.stderr)?.[1];
  t.ok(id, `the error line names the decision: ${r.stderr}`);
  const why = JSON.parse((await cli(sb, ['--json', 'policy', 'explain', '--decision', id ?? 'none'])).stdout);
  t.match(why, { action: 'job:run', allow: false, rules: [{ id: 'engine-needs-workspace-level' }], request: { principal: { kind: 'engine' }, project: { trusted: true, level: 'read_only' } } });
});

t.test('says "command not found" for a missing executable, in text and in --json', async (t) => {
  const sb = project('true');
  await cli(sb, [...ws(sb), 'trust']);
  const r = await cli(sb, [...ws(sb), 'test', '--yes', '--', 'nosuchcmd-sc']);
  t.equal(r.code, 1);
  t.match(r.stdout, /^failed: \["nosuchcmd-sc"\]: command not found: nosuchcmd-sc/);
  const j = JSON.parse((await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'nosuchcmd-sc'])).stdout);
  t.match(j, { passed: false, reason: 'command not found: nosuchcmd-sc', job: { state: 'failed' } });
});

t.test('a failing command exits 1 whatever its own status, with the status, reason and output tail in --json', async (t) => {
  const sb = project('echo out-line; echo err-line >&2; exit 3');
  await cli(sb, [...ws(sb), 'trust']);
  const r = await cli(sb, [...ws(sb), 'test', '--yes']);
  t.equal(r.code, 1, 'its 3 would read as a policy denial, so it is not passed through');
  t.match(r.stdout, /out-line/, 'output streams as it runs');
  t.match(r.stderr, /err-line/);
  t.match(r.stdout, /failed: \["npm","test"\]: exited 3 after \d+ ms/);
  // The same script given as the command: --json reports it the same way, without a second npm start.
  const j = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'sh', '-c', 'echo out-line; echo err-line >&2; exit 3']);
  t.equal(j.code, 1);
  const data = JSON.parse(j.stdout);
  t.match(data, { passed: false, reason: 'exited 3', job: { exit_code: 3 }, output_truncated: false });
  t.match(data.output_tail, /out-line\n[^]*err-line/);
});

t.test('a passing command exits 0 and keeps only the tail of long output', async (t) => {
  const sb = project('true');
  await cli(sb, [...ws(sb), 'trust']);
  const j = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', process.execPath, '-e', "process.stdout.write('x'.repeat(10000) + 'END')"]);
  t.equal(j.code, 0);
  const data = JSON.parse(j.stdout);
  t.match(data, { passed: true, job: { state: 'succeeded', exit_code: 0 }, output_truncated: true });
  t.ok(data.output_tail.endsWith('xEND'), 'the end is kept');
  t.ok(Buffer.byteLength(data.output_tail) <= 4096, 'bounded by cli.output_tail_bytes');
  t.notOk('reason' in data);
});

t.test('without --yes and without a terminal is a usage error, and nothing runs', async (t) => {
  const sb = project('echo ran');
  await cli(sb, [...ws(sb), 'trust']);
  const r = await cli(sb, [...ws(sb), 'test']);
  t.equal(r.code, 2);
  t.match(r.stderr, /stdin is not a terminal.*pass --yes.*\[SC_APPROVAL_REQUIRED\]/);
  t.notMatch(r.stdout, /ran/);
});
