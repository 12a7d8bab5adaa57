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
