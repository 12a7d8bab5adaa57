// A delegated task uses a granted external server, end to end: an MCP host (the
// official SDK clients) starts shadow_run, the fake model calls
// mcp__everything__echo, the exact call waits for shadow_approve, runs on the real
// server-everything (over stdio, and over its Streamable HTTP mode), and its
// output reaches the model; a denied call sends nothing; nothing is left running.
import t from 'tap';
import { call, type Format, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { cli, until } from '../fixtures/env.js';
import { startFakeModel, type Step } from '../fixtures/fake-model.js';
import { httpClient, startGateway } from '../fixtures/http.js';
import { connect } from '../fixtures/mcp.js';
import { EVERYTHING, everythingHttp, grant, peerDef, processesWith, world } from '../fixtures/mcp-client.js';

const echoTask = (message: string): Step[] => [
  { text: 'Asking the echo tool.', tool_calls: [{ id: 'e1', name: 'mcp__everything__echo', arguments: JSON.stringify({ message }) }], finish: 'tool_calls', split: 6 },
  { tool_calls: [{ id: 'e2', name: 'finish', arguments: JSON.stringify({ summary: 'asked the echo tool' }) }], finish: 'tool_calls' },
];

type Via = 'stdio-v2' | 'http-v1';

for (const [format, via, transport] of [['openai', 'stdio-v2', 'stdio'], ['anthropic', 'http-v1', 'http']] as Array<[Format, Via, 'stdio' | 'http']>) {
  t.test(`${format} model over ${via}, server-everything over ${transport}: the approved call returns real output, a denied one sends nothing`, async (t) => {
    const w = await world();
    const marker = `run-mcp-${process.pid}-${transport}`;
    const def = transport === 'stdio' ? { command: [process.execPath, EVERYTHING, 'stdio', marker], timeout_sec: 30 } : { url: (await everythingHttp(t)).url, timeout_sec: 30 };
    const g = await grant(w, 'everything', def);
    const fake = await startFakeModel({ format, script: [...echoTask('hello from the task'), ...echoTask('never sent')] });
    t.teardown(() => fake.close());
    useFakeModel(w.sb, format, fake.url);
    const flags = ['--allow-write', '--allow-approvals'];
    let c;
    if (via === 'http-v1') {
      const gw = await startGateway(w.sb, flags);
      t.teardown(() => gw.stop());
      c = await httpClient(gw.url, 'v1');
    } else c = await connect(w.sb, 'v2-modern', flags);
    t.teardown(() => c.close());

    const started = await call(c, 'shadow_run', { prompt: 'echo a greeting through the external tool', mode: 'build', permission_level: 'workspace' });
    const stop = await nextStop(c, started.job_id, 30000);
    t.equal(stop.job.state, 'waiting_approval');
    const [approval] = stop.approvals;
    t.equal(approval.kind, 'mcp_call');
    t.same(approval.action, { server: g.id, tool: 'echo', arguments: { message: 'hello from the task' } }, 'the server id, the tool and the complete arguments');
    const pending = await cli(w.sb, ['--project', w.sb.project, 'approvals']);
    t.match(pending.stdout, `call ${g.id} tool echo with {"message":"hello from the task"}`, 'shadowcode approvals shows the exact call');
    await call(c, 'shadow_approve', { approval_id: approval.id, decision: 'approve' });
    const end = await nextStop(c, started.job_id, 30000);
    t.match(end.answer, { state: 'succeeded', summary: 'asked the echo tool' });
    const toolMessage = JSON.stringify(fake.requests[1]?.body);
    t.match(toolMessage, /Echo: hello from the task/, "server-everything's own answer reached the model");
    const events = (await call(c, 'shadow_jobs', { action: 'events', job_id: started.job_id, limit: 100 })).events;
    const kinds = events.map((e: { kind: string }) => e.kind);
    t.ok(kinds.indexOf('mcp.connected') < kinds.indexOf('mcp.closed') && kinds.indexOf('mcp.closed') < kinds.indexOf('answer'), 'connected, then closed before the answer');
    t.match(events.find((e: { kind: string }) => e.kind === 'mcp.connected').body, { definition: g.id, hash: g.hash, transport, catalog_hash: /^[0-9a-f]{64}$/ });

    const second = await call(c, 'shadow_run', { prompt: 'again', mode: 'build', permission_level: 'workspace' });
    const ask = await nextStop(c, second.job_id, 30000);
    await call(c, 'shadow_approve', { approval_id: ask.approvals[0].id, decision: 'deny' });
    const after = await nextStop(c, second.job_id, 30000);
    t.match(after.answer, { state: 'succeeded' });
    const denied = JSON.stringify(fake.requests[3]?.body);
    t.match(denied, /SC_APPROVAL_DENIED: the call of everything\/echo was denied by the user; nothing was sent/);
    t.notMatch(denied, /Echo: never sent/);
    if (transport === 'stdio') {
      await until(() => processesWith(marker).length === 0, 5000).catch(() => {});
      t.same(processesWith(marker), [], 'no server-everything process is left');
    }
  });
}

t.test('a plan task is offered no external tool and starts no server', async (t) => {
  const w = await world();
  await grant(w, 'everything', { command: [process.execPath, EVERYTHING, 'stdio', `plan-marker-${process.pid}`], timeout_sec: 30 });
  const fake = await startFakeModel({ format: 'openai', script: [{ text: 'a plan' }] });
  t.teardown(() => fake.close());
  useFakeModel(w.sb, 'openai', fake.url);
  const c = await connect(w.sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
  t.teardown(() => c.close());
  const started = await call(c, 'shadow_run', { prompt: 'plan it', mode: 'plan', permission_level: 'workspace' });
  const end = await nextStop(c, started.job_id, 30000);
  t.match(end.answer, { state: 'succeeded' });
  const offered = (fake.requests[0]?.body.tools ?? []).map((x: { function: { name: string } }) => x.function.name);
  t.notOk(offered.some((n: string) => n.startsWith('mcp')), `no mcp tool among ${offered.join(', ')}`);
  t.same(processesWith(`plan-marker-${process.pid}`), [], 'the server was never started');
});

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  t.test(`${signal} of the server while a task holds an external connection leaves no process of it`, async (t) => {
    const w = await world();
    const marker = `run-mcp-${signal}-${process.pid}`;
    await grant(w, 'peer', peerDef('fork-ignore-term', {}, [marker]));
    const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: [{ id: 'p1', name: 'mcp__peer__echo', arguments: JSON.stringify({ text: 'wait here' }) }], finish: 'tool_calls' }] });
    t.teardown(() => fake.close());
    useFakeModel(w.sb, 'openai', fake.url);
    const c = await connect(w.sb, 'v2-modern', ['--allow-write', '--allow-approvals']);
    t.teardown(() => c.close().catch(() => {}));
    const started = await call(c, 'shadow_run', { prompt: 'call and wait', mode: 'build', permission_level: 'workspace' });
    const stop = await nextStop(c, started.job_id, 30000);
    t.equal(stop.approvals[0]?.kind, 'mcp_call', 'the task waits on the call, with its connection open');
    t.ok(processesWith(marker).length > 0, 'the external server runs');
    t.ok(processesWith(`MCP-PEER-GRANDCHILD ${marker}`).length > 0, 'with its TERM-proof grandchild');
    const serverPid = Number((await call(c, 'shadow_status')).connection.owner.split(':')[1]);
    process.kill(serverPid, signal);
    await until(() => processesWith(marker).length === 0 && processesWith(`MCP-PEER-GRANDCHILD ${marker}`).length === 0, 10000).catch(() => {});
    t.same(processesWith(marker), [], 'the server is gone');
    t.same(processesWith(`MCP-PEER-GRANDCHILD ${marker}`), [], 'and so is the grandchild that ignores TERM');
  });
}
