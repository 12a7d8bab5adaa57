// The audit log from the CLI: audit list (newest first, paged, filtered) and audit show (one row in full).
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { sinceOf } from '../../src/ops/audit.js';
import { cli, sandbox } from '../fixtures/env.js';

interface Row {
  seq: number;
  at: string;
  kind: string;
  body: any;
  prev: string;
  hash: string;
}

const list = async (sb: ReturnType<typeof sandbox>, ...argv: string[]) => {
  const r = await cli(sb, ['--json', 'audit', 'list', ...argv]);
  return { code: r.code, page: JSON.parse(r.stdout) as { rows: Row[]; next_cursor: string | null; error?: any } };
};

async function history() {
  const sb = sandbox();
  const other = join(sb.root, 'other');
  mkdirSync(other);
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  await cli(sb, ['--project', other, 'test', '--yes', '--', 'true']);
  return { sb, other };
}

t.test('audit list --decision deny --json returns the denials, newest first, as the chain verifies them', async (t) => {
  const { sb, other } = await history();
  const { code, page } = await list(sb, '--decision', 'deny');
  t.equal(code, 0);
  t.equal(page.rows.length, 2, 'the two refused submissions');
  t.ok(page.rows.every((r) => r.kind === 'decision' && r.body.allow === false && r.body.action === 'engine:submit'));
  t.same(page.rows.map((r) => r.body.project), [other, sb.project], 'newest first');
  for (const r of page.rows) {
    // The row's own hash, recomputed from what was printed: these are the stored rows, not a summary.
    const text = JSON.stringify(r.body);
    t.equal(createHash('sha256').update(`${r.prev}\n${r.seq}\n${r.at}\n${r.kind}\n${text}`).digest('hex'), r.hash, `row ${r.seq} hashes as the chain holds it`);
  }
  const allowed = (await list(sb, '--decision', 'allow')).page.rows;
  t.ok(allowed.length > 0 && allowed.every((r) => r.body.allow === true));
  t.notOk(allowed.some((r) => r.body.action === 'cli:audit.read' && r.body.args?.decision === 'allow'), 'the listing leaves out its own decision');
  const mine = (await cli(sb, ['--json', '--project', sb.project, 'audit', 'list'])).stdout;
  t.ok(JSON.parse(mine).rows.every((r: Row) => r.kind !== 'decision' || r.body.project === sb.project), '--project keeps that project\'s decisions');
  const text = await cli(sb, ['audit', 'list', '--decision', 'deny']);
  t.match(text.stdout, /^ROW +AT \(UTC\) +DECISION +ACTION +OWNER +PROJECT +RULES\n\d+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +deny +engine:submit +cli:\S+ +\S+ +engine-writing-work-needs-trust\n/);
});

t.test('audit list pages on with a cursor and narrows by action, owner and time', async (t) => {
  const { sb } = await history();
  const first = await list(sb, '--limit', '2');
  t.equal(first.page.rows.length, 2);
  t.ok(first.page.next_cursor, 'a cursor to the next page');
  const second = await list(sb, '--limit', '2', '--cursor', first.page.next_cursor as string);
  t.ok((second.page.rows[0]?.seq ?? 0) < (first.page.rows[1]?.seq ?? 0), 'the next page starts below the last row shown');
  const tests = (await list(sb, '--action', 'cli:t*')).page.rows;
  t.ok(tests.length >= 3 && tests.every((r) => r.body.action.startsWith('cli:t')), 'a family by its prefix');
  t.same([...new Set((await list(sb, '--action', 'cli:test')).page.rows.map((r) => r.body.action))], ['cli:test'], 'an exact action');
  const byCli = (await list(sb, '--owner', 'cli:*', '--action', 'engine:submit')).page.rows;
  t.equal(byCli.length, 3, 'the submissions of CLI invocations, by owner prefix');
  t.equal((await list(sb, '--owner', 'stdio:*')).page.rows.length, 0);
  t.equal((await list(sb, '--since', '2999-01-01')).page.rows.length, 0, 'nothing after a future date');
  t.ok((await list(sb, '--since', '1h')).page.rows.length > 0, 'everything from the last hour');
  const bad = await cli(sb, ['--json', 'audit', 'list', '--since', 'yesterday']);
  t.equal(bad.code, 2);
  t.equal(JSON.parse(bad.stdout).error.code, 'SC_BAD_VALUE');
  t.equal(JSON.parse((await cli(sb, ['--json', 'audit', 'list', '--limit', '0'])).stdout).error.code, 'SC_BAD_VALUE');
  t.equal(JSON.parse((await cli(sb, ['--json', 'audit', 'list', '--cursor', 'nope'])).stdout).error.code, 'SC_CURSOR_INVALID');
});

t.test('--since reads spans, dates and times', async (t) => {
  const now = new Date('2026-12-07T12:00:00.000Z');
  t.equal(sinceOf('30m', now), '2026-12-07T11:30:00.000Z');
  t.equal(sinceOf('2d', now), '2026-12-05T12:00:00.000Z');
  t.equal(sinceOf('2026-12-07'), new Date(2026, 11, 7).toISOString(), 'a date is local midnight');
  t.equal(sinceOf('2026-12-07T09:00:00Z'), '2026-12-07T09:00:00.000Z');
  t.throws(() => sinceOf('soon'), { code: 'SC_BAD_VALUE' });
});

t.test('audit show gives one decision in full, by id or row number, with what followed it', async (t) => {
  const { sb } = await history();
  const run = (await list(sb, '--action', 'job:run')).page.rows[0] as Row;
  t.ok(run, 'the test job was decided');
  const shown = JSON.parse((await cli(sb, ['--json', 'audit', 'show', run.body.decision_id])).stdout);
  t.same(shown.row, run, 'the same row as audit list');
  t.same(shown.rules.map((r: { id: string }) => r.id), run.body.reasons);
  t.ok(shown.related.some((r: Row) => r.kind === 'spawn' && r.body.decision_id === run.body.decision_id), 'the process it started follows it');
  const bySeq = JSON.parse((await cli(sb, ['--json', 'audit', 'show', String(run.seq)])).stdout);
  t.same(bySeq.row, run);
  const text = await cli(sb, ['audit', 'show', run.body.decision_id]);
  t.match(text.stdout, new RegExp(`^row ${run.seq} at \\S+: decision ALLOW job:run\\nhash [0-9a-f]{64} \\(previous [0-9a-f]{64}\\)\\n {2}permit engine-runs-approved-work: .*\\nbody:\\n`));
  t.match(text.stdout, new RegExp(`\\nrelated rows:\\n {2}row \\d+ at \\S+: spawn .*\\nwhy: shadowcode policy explain --decision ${run.body.decision_id}\\n$`));
  const missing = await cli(sb, ['audit', 'show', '999999']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /\[SC_AUDIT_NOT_FOUND\]/);
});

t.test('audit list shows a row that follows a decision as its plain fields, not raw JSON', async (t) => {
  const { sb } = await history();
  const text = (await cli(sb, ['audit', 'list', '--limit', '1000'])).stdout;
  const line = text.split('\n').find((l) => /^\d+\s+\S+ \S+\s+spawn\s/.test(l));
  t.ok(line, 'the spawn row is listed');
  t.match(line, /\skind=command argv0=\S+ level=(bwrap|none) network=false\s/, 'what was started, in words');
  t.notMatch(line, /[{}"]|decision_id/, 'no JSON, no decision id (audit show has it)');
});

t.test('a stored secret that reached a recorded argument is not printed by audit list or show', async (t) => {
  const sb = sandbox();
  const canary = 'sc-canary-value-7f3a91c2d4';
  t.equal((await cli(sb, ['secret', 'set', 'CANARY_TOKEN'], `${canary}\n`)).code, 0);
  await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'echo', canary]);
  const listed = await cli(sb, ['--json', 'audit', 'list']);
  t.notMatch(listed.stdout, canary);
  const row = (JSON.parse(listed.stdout).rows as Row[]).find((r) => r.body.action === 'cli:test') as Row;
  const shown = await cli(sb, ['audit', 'show', String(row.seq)]);
  t.equal(shown.code, 0);
  t.notMatch(shown.stdout, canary);
  t.notMatch((await cli(sb, ['audit', 'list'])).stdout, canary);
});
