// Audit ordering over HTTP: a request's decision rows (the request's and its tool
// call's) are committed before the tool runs and before any response byte. The
// write lock on state.db is held from this test process, so the gateway cannot
// commit until the test lets it.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t, { type Test } from 'tap';
import { cli, sandbox, sleep, until } from '../fixtures/env.js';
import { auth, type Gateway, httpClient, type HttpFlavor, JSON_HEADERS, raw, startGateway } from '../fixtures/http.js';

const call = (gw: Gateway, name: string, args: Record<string, unknown>) => {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
  });
  return raw(gw.port, { headers: { ...JSON_HEADERS, ...auth(), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name }, body });
};

async function setup(t: Test) {
  const sb = sandbox('sc-order');
  await cli(sb, ['--project', sb.project, 'trust']);
  const gw = await startGateway(sb, ['--allow-write']);
  t.teardown(() => gw.stop());
  const warm = await call(gw, 'shadow_status', {});
  t.equal(warm.status, 200, 'the gateway answers');
  const holder = new Database(join(sb.profile, 'state.db'));
  t.teardown(() => {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
  });
  const rows = () => holder.prepare('SELECT seq, at, kind, body FROM audit ORDER BY seq').all() as Array<{ seq: number; at: string; kind: string; body: string }>;
  return { sb, gw, holder, rows };
}

// Each test has its own profile and gateway. The first waits out the gateway's busy timeout
// (5 s of nothing), so the others run beside it rather than after it.
t.jobs = 2;

t.test('a tool call whose decision cannot be committed never reaches the tool', async (t) => {
  const { sb, gw, holder, rows } = await setup(t);
  const before = rows().length;
  holder.exec('BEGIN IMMEDIATE');
  // The gateway waits out its busy timeout, then refuses: the append never runs.
  const r = await call(gw, 'shadow_memory', { action: 'append', text: 'must not be written' });
  holder.exec('ROLLBACK');
  t.not(r.status, 200);
  t.notMatch(r.body, /must not be written|"result"/, 'no tool result in what came back');
  t.equal((holder.prepare('SELECT count(*) AS n FROM memory').get() as { n: number }).n, 0, 'nothing was appended');
  t.notOk(rows().slice(before).some((row) => row.kind === 'decision' && JSON.parse(row.body).action === 'tool:shadow_memory.append'), 'and no decision row claims it');
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true);
});

t.test('the tool answers only after both decision rows commit, in one transaction, with the outcome chained after them', async (t) => {
  const { sb, gw, holder, rows } = await setup(t);
  const before = rows().length;
  const events: string[] = [];
  holder.exec('BEGIN IMMEDIATE');
  const pending = call(gw, 'shadow_status', {}).then((r) => (events.push('response'), r));
  // Time for the request to reach the gate; the ordering below holds however long this is.
  await sleep(400);
  events.push('released');
  holder.exec('ROLLBACK');
  const r = await pending;
  t.equal(r.status, 200);
  t.same(events, ['released', 'response'], 'no response byte while the decision could not commit');
  await until(() => rows().slice(before).filter((row) => row.kind === 'http_outcome').length === 2);
  // The warm-up request's outcome may ride with this commit, ahead of its decisions.
  const mine = rows().slice(before);
  const decisions = mine.filter((row) => row.kind === 'decision');
  t.equal(decisions.length, 2, 'the call is decided once, with its request, not again by the SDK path');
  const [req, tool] = decisions;
  t.equal(JSON.parse(req!.body).action, 'http:request');
  t.equal(JSON.parse(tool!.body).action, 'tool:shadow_status');
  t.equal(tool!.seq, req!.seq + 1);
  t.equal(req!.at, tool!.at, 'one commit for both');
  const outcome = mine.find((row) => row.kind === 'http_outcome' && JSON.parse(row.body).decision_id === JSON.parse(req!.body).decision_id)!;
  t.ok(outcome.seq > tool!.seq);
  t.match(JSON.parse(outcome.body), { decision_id: JSON.parse(req!.body).decision_id, status: 200 });
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true);
});

t.test('outcome rows left waiting are written when the gateway stops', async (t) => {
  const { sb, gw, rows } = await setup(t);
  const r = await call(gw, 'shadow_status', {});
  t.equal(r.status, 200);
  await gw.stop();
  const outcomes = rows().filter((row) => row.kind === 'http_outcome');
  t.equal(outcomes.length, 2, 'one outcome per request');
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true);
});

t.test('with every client era, a tool call is decided once, in the same commit as its HTTP request', async (t) => {
  const { gw, rows } = await setup(t);
  for (const flavor of ['v2-modern', 'v2-legacy', 'v1'] as HttpFlavor[]) {
    const c = await httpClient(gw.url, flavor);
    const before = rows().length;
    const r = await c.callTool({ name: 'shadow_status', arguments: {} });
    await c.close();
    t.notOk(r.isError, flavor);
    const decisions = rows().slice(before).filter((row) => row.kind === 'decision').map((row) => ({ ...row, body: JSON.parse(row.body) }));
    const tools = decisions.filter((d) => d.body.action === 'tool:shadow_status');
    t.equal(tools.length, 1, `${flavor}: one decision for the call`);
    const req = decisions.find((d) => d.seq === tools[0]!.seq - 1);
    t.equal(req?.body.action, 'http:request', `${flavor}: right after its request's decision`);
    t.equal(req?.at, tools[0]!.at, `${flavor}: in one commit`);
  }
});

// Group commit: requests that arrive together are decided in one transaction. Each still waits for that
// commit before its tool runs or any byte of its answer is sent.
const memoryCount = (holder: Database.Database) => (holder.prepare('SELECT count(*) AS n FROM memory').get() as { n: number }).n;

t.test('requests arriving together each get their own decision rows, and none runs or answers before the shared commit', async (t) => {
  const { sb, gw, holder, rows } = await setup(t);
  const before = rows().length;
  const answered: number[] = [];
  holder.exec('BEGIN IMMEDIATE');
  const texts = Array.from({ length: 8 }, (_, i) => `note ${i}`);
  const pending = texts.map((text, i) => call(gw, 'shadow_memory', { action: 'append', text }).then((r) => (answered.push(i), r)));
  await sleep(400);
  t.same(answered, [], 'no answer while the decisions could not commit');
  t.equal(memoryCount(holder), 0, 'and no tool ran');
  holder.exec('ROLLBACK');
  const results = await Promise.all(pending);
  t.ok(results.every((r) => r.status === 200 && !/"isError":true/.test(r.body)), 'every request is served');
  const content = (holder.prepare('SELECT content FROM memory').all() as Array<{ content: string }>).map((r) => r.content).join('\n');
  for (const text of texts) t.equal(content.split(text).length - 1, 1, `${text} appended once`);
  const decisions = rows().slice(before).filter((row) => row.kind === 'decision');
  const tools = decisions.filter((d) => JSON.parse(d.body).action === 'tool:shadow_memory.append');
  t.equal(tools.length, 8, 'one decision per call');
  t.equal(new Set(tools.map((d) => JSON.parse(d.body).decision_id)).size, 8, 'each its own');
  for (const tool of tools) t.equal(JSON.parse(decisions.find((d) => d.seq === tool.seq - 1)!.body).action, 'http:request', 'right after its own request');
  t.ok(new Set(tools.map((d) => d.at)).size < tools.length, 'some of them shared a commit');
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true, 'the chain verifies');
});

t.test('a refused call decided in a shared commit has no effect; the others in it run', async (t) => {
  const sb = sandbox('sc-order-ro');
  await cli(sb, ['--project', sb.project, 'trust']);
  // Without --allow-write: a memory append is refused by policy, a status read is not.
  const gw = await startGateway(sb);
  t.teardown(() => gw.stop());
  const holder = new Database(join(sb.profile, 'state.db'));
  t.teardown(() => {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
  });
  t.equal((await call(gw, 'shadow_status', {})).status, 200);
  holder.exec('BEGIN IMMEDIATE');
  const pending = [call(gw, 'shadow_status', {}), call(gw, 'shadow_memory', { action: 'append', text: 'refused' }), call(gw, 'shadow_status', {}), call(gw, 'shadow_memory', { action: 'append', text: 'refused too' })];
  await sleep(300);
  holder.exec('ROLLBACK');
  const [s1, m1, s2, m2] = await Promise.all(pending);
  t.match(s1!.body, /"structuredContent"/);
  t.match(s2!.body, /"structuredContent"/);
  for (const m of [m1!, m2!]) t.match(m.body, /SC_POLICY_DENIED|denied/, 'the append is refused');
  t.equal(memoryCount(holder), 0, 'nothing was appended');
  const appends = (holder.prepare("SELECT body FROM audit WHERE kind = 'decision'").all() as Array<{ body: string }>).map((r) => JSON.parse(r.body)).filter((b) => b.action === 'tool:shadow_memory.append');
  t.equal(appends.length, 2, 'each refusal has its row');
  t.ok(appends.every((b) => b.allow === false));
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true);
});

t.test('a gateway killed while its requests wait for their commit leaves no effect and no row', async (t) => {
  const { sb, gw, holder, rows } = await setup(t);
  const before = rows().length;
  holder.exec('BEGIN IMMEDIATE');
  const pending = Array.from({ length: 4 }, (_, i) => call(gw, 'shadow_memory', { action: 'append', text: `lost ${i}` }).catch((e: Error) => e));
  await sleep(400);
  gw.child.kill('SIGKILL');
  await gw.exit;
  holder.exec('ROLLBACK');
  const results = await Promise.all(pending);
  t.ok(results.every((r) => r instanceof Error || r.status !== 200), 'no request was served');
  t.equal(memoryCount(holder), 0, 'nothing was appended');
  t.notOk(rows().slice(before).some((row) => row.kind === 'decision' && JSON.parse(row.body).action === 'tool:shadow_memory.append'), 'and no decision row claims it');
  const v = await cli(sb, ['audit', 'verify', '--json']);
  t.equal(JSON.parse(v.stdout).ok, true);
});
