/*
 * The export in this process, against a local OTLP/HTTP receiver: protobuf on the wire
 * (the default), what is withheld by default and what the content opt-in sends (scrubbed),
 * and a collector that never answers: every call still completes, the queue's overflow is
 * dropped and counted, and status and shadow_doctor say so.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Policy } from '../../src/policy/load.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { registerSecretValue } from '../../src/policy/redact.js';
import { startTelemetryExport, type TelemetryDeps } from '../../src/ops/telemetry.js';
import { callTool } from '../../src/server/dispatch.js';
import { tel } from '../../src/telemetry/hooks.js';
import { openDb } from '../../src/store/db.js';
import { OpenAiCompatibleProvider } from '../../src/agent/providers/openai.js';
import { openTaskTools } from '../../src/client/task-tools.js';
import { open } from '../../src/lib/index.js';
import { agentBench } from '../fixtures/agent.js';
import { httpClient, TOKEN } from '../fixtures/http.js';
import { grant, peerDef, taskCtx, world } from '../fixtures/mcp-client.js';
import { cli, connection, sandbox, type Sandbox } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { type GotSpan, otlpReceiver } from '../fixtures/otlp/receiver.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';

/** The shipped policy with a short shutdown deadline (a test waits for it when a collector hangs), and other telemetry limits. */
function policyWith(shutdownMs: number, more: Partial<Policy['limits']['telemetry']> = {}): Policy {
  const p = shippedPolicy();
  return { ...p, limits: { ...p.limits, telemetry: { ...p.limits.telemetry, shutdown_ms: shutdownMs, ...more } } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function exporting(sb: Sandbox, env: NodeJS.ProcessEnv, policy: Policy = shippedPolicy()) {
  const c = await connection(sb, { policy });
  const deps: TelemetryDeps = {
    profileDir: sb.profile,
    env,
    policy,
    gate: { policy, db: () => c.engine.db() },
    request: (action, extra = {}) => ({ action, principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null, ...extra }),
    db: () => c.engine.db(),
    secrets: () => c.engine.secrets(),
  };
  const lines: string[] = [];
  const stop = await startTelemetryExport(deps, 'test', (l) => lines.push(l));
  if (!stop) throw new Error(`telemetry did not start: ${lines.join('; ')}`);
  // A call as a stdio server's handler makes it: in its MCP SERVER span, parented by params._meta.
  const call = async (name: string, args: Record<string, unknown>, id: number) => {
    const r = await tel()!.mcpRequest({ method: 'tools/call', target: name, id, meta: { traceparent: `00-${TRACE}-${PARENT}-01` }, transport: 'pipe', protocolVersion: '2025-11-25', args }, () => callTool(c.conn, name, args));
    return { isError: r.isError === true, data: r.structuredContent as any };
  };
  return { ...c, stop, call };
}

t.test('OTLP/protobuf by default: spans, audit log records and metrics decode with the OTLP definitions', async (t) => {
  const sb = sandbox('sc-otel-pb');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const x = await exporting(sb, { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url });
  const ok = await x.call('shadow_status', {}, 7);
  t.notOk(ok.isError);
  const denied = await x.call('shadow_memory', { action: 'append', text: 'a note' }, 8);
  t.ok(denied.isError, 'a write without --allow-write is denied');
  const { abandoned } = await x.stop();
  t.notOk(abandoned, 'everything was sent by the shutdown deadline');
  x.close();
  t.notOk(tel(), 'the export is uninstalled');

  t.same(rx.errors, [], 'every body decoded');
  t.ok(rx.requests.length > 0 && rx.requests.every((r) => r.encoding === 'protobuf' && r.headers['content-type'] === 'application/x-protobuf'), 'every request is OTLP/protobuf');
  const status = rx.spans.find((s) => s.name === 'tools/call shadow_status') as GotSpan;
  t.match(status, { traceId: TRACE, parentSpanId: PARENT, kind: 2 });
  t.match(status.attributes, { 'mcp.method.name': 'tools/call', 'jsonrpc.request.id': '7', 'mcp.protocol.version': '2025-11-25', 'network.transport': 'pipe' });
  const memory = rx.spans.find((s) => s.name === 'tools/call shadow_memory') as GotSpan;
  t.match(memory.attributes, { 'error.type': 'tool_error', 'shadowcode.error.code': 'SC_POLICY_DENIED' });
  t.equal(memory.status.code, 2, 'a denied call is an ERROR span');
  const deny = rx.spans.find((s) => s.parentSpanId === memory.spanId && s.name === 'run_guardrail shadowcode-policy') as GotSpan;
  t.match(deny.attributes, { 'gen_ai.guardrail.verdict.type': 'deny', 'gen_ai.guardrail.action.type': 'block', 'gen_ai.guardrail.security.policy.rule.id': 'write-needs-flag' });
  t.match(String(deny.attributes['gen_ai.guardrail.verdict.reason']), /write-needs-flag/);

  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT seq, hash FROM audit ORDER BY seq').all() as Array<{ seq: number; hash: string }>;
  const exported = new Map(rx.logs.map((l) => [Number(l.attributes['shadowcode.audit.seq']), l]));
  for (const r of rows.slice(1)) t.equal(exported.get(r.seq)?.attributes['shadowcode.audit.hash'], r.hash, `audit row ${r.seq} arrived with its chain hash`);
  t.equal(exported.get(rows[0]!.seq), undefined, 'the decision that started the export precedes it');
  const withheld = rx.logs.find((l) => l.attributes['shadowcode.action'] === 'tool:shadow_memory.append');
  t.match(withheld?.attributes, { 'shadowcode.audit.body_complete': false });
  t.notMatch(String(withheld?.body), /a note/, 'the arguments a decision recorded are withheld');

  const hist = rx.points.find((p) => p.metric === 'mcp.server.operation.duration' && p.attributes['gen_ai.tool.name'] === 'shadow_memory');
  t.match(hist, { kind: 'histogram', count: 1, attributes: { 'error.type': 'tool_error' } });
  t.ok(rx.points.some((p) => p.metric === 'shadowcode.gate.decisions' && p.attributes['gen_ai.guardrail.verdict.type'] === 'deny' && p.value === 1), 'the denial is counted');
});

t.test('nothing sensitive leaves by default; with the profile\'s content opt-in, arguments leave scrubbed of secrets', async (t) => {
  const secret = 'otel-canary-secret-7f0c3e9a21';
  registerSecretValue(secret, 'CANARY_KEY');
  const args = { action: 'append', text: `note with ${secret} and plain words` };
  for (const content of [false, true]) {
    const sb = sandbox('sc-otel-content');
    if (content) {
      mkdirSync(sb.profile, { mode: 0o700 });
      writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({ telemetry: { content: true } }));
    }
    const rx = await otlpReceiver();
    t.teardown(() => rx.close());
    const x = await exporting(sb, { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    await x.call('shadow_memory', args, 1);
    await x.stop();
    x.close();
    const all = JSON.stringify({ spans: rx.spans.map((s) => ({ ...s, startNs: 0, endNs: 0 })), logs: rx.logs });
    t.notOk(all.includes(secret), `content ${content ? 'on' : 'off'}: the secret never leaves`);
    t.equal(all.includes('plain words'), content, content ? 'the opt-in exports the arguments' : 'the arguments stay home');
    if (content) {
      const span = rx.spans.find((s) => s.name === 'tools/call shadow_memory') as GotSpan;
      t.match(String(span.attributes['gen_ai.tool.call.arguments']), /\[secret:CANARY_KEY\]/, 'scrubbed, naming the secret instead');
    }
  }
});

t.test('a collector that never answers delays no call: overflow is dropped and counted, and status and shadow_doctor say so', async (t) => {
  const sb = sandbox('sc-otel-dead');
  const rx = await otlpReceiver({ blackhole: true });
  t.teardown(() => rx.close());
  const env = { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_TIMEOUT: '1000', OTEL_BSP_MAX_QUEUE_SIZE: '4', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2', OTEL_BLRP_MAX_QUEUE_SIZE: '4', OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: '2' };
  const x = await exporting(sb, env, policyWith(300));
  // Every call completes while the collector holds every export open.
  for (let i = 0; i < 20; i++) t.notOk((await x.call('shadow_status', {}, i)).isError, `call ${i} answered`);
  const counts = tel()!.counts();
  t.ok(counts.traces.dropped > 0 && counts.logs.dropped > 0, `the queues overflowed and counted it (${counts.traces.dropped} spans, ${counts.logs.dropped} log records)`);
  t.equal(counts.traces.exported, 0, 'nothing was acknowledged');
  const doctor = await x.call('shadow_doctor', {}, 99);
  const check = (doctor.data.checks as Array<{ id: string; status: string; detail: string }>).find((c) => c.id === 'telemetry');
  t.match(check, { status: 'warn', detail: /dropped/ }, 'shadow_doctor reports the loss');
  t.ok(doctor.data.telemetry.traces.dropped > 0, 'with the counts');
  const { abandoned } = await x.stop();
  t.ok(abandoned, 'the shutdown gave up on the export still waiting, at its deadline');
  x.close();
  const status = JSON.parse((await cli(sb, ['--json', 'status'])).stdout) as { telemetry: { state: string; dropped: number } };
  t.ok(status.telemetry.dropped >= counts.traces.dropped + counts.logs.dropped, `status counts what the process dropped (${status.telemetry.dropped})`);
  const show = JSON.parse((await cli(sb, ['--json', 'telemetry', 'show'])).stdout) as { processes: Array<{ pid: number; running: boolean }> };
  t.match(show.processes, [{ pid: process.pid }], 'telemetry show lists the process and its counters');
});

t.test('a collector that is down is tried once per back-off, not once per batch: calls go on, and what was not sent is counted', async (t) => {
  const sb = sandbox('sc-otel-down');
  const rx = await otlpReceiver({ hangUp: true });
  t.teardown(() => rx.close());
  // Batches of one item, due 10 ms after it: without a back-off, nearly every item would be a connection attempt.
  const env = { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_METRICS_EXPORTER: 'none', OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_BLRP_SCHEDULE_DELAY: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1', OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: '1' };
  const x = await exporting(sb, env, policyWith(300, { backoff_min_ms: 400, backoff_max_ms: 800, batch_retries: 1 }));
  t.teardown(() => x.stop());
  const started = Date.now();
  let calls = 0;
  let answered = 0;
  while (Date.now() - started < 2000) {
    if (!(await x.call('shadow_status', {}, calls)).isError) answered++;
    calls++;
    await sleep(20);
  }
  const attempts = rx.connections();
  t.equal(answered, calls, `every call was answered (${calls})`);
  t.ok(calls >= 20, 'and they made many batches due');
  // The spans and the log records share the collector and its back-off: at most one attempt of each
  // per back-off period (at least 320 ms with the jitter), and one of each at the start.
  t.ok(attempts > 0 && attempts <= 2 * (Math.ceil((Date.now() - started) / 320) + 1), `${attempts} connection attempts in ${Date.now() - started} ms, for ${calls} calls`);
  const counts = tel()!.counts();
  t.ok(counts.traces.failed + counts.traces.dropped > 0 && counts.logs.failed + counts.logs.dropped > 0, 'what could not be sent is counted');
  t.match(counts.last_error, /ECONNRESET|socket hang up/, 'with the reason');
  await x.stop();
  x.close();
});

t.test('a collector that answers 503 while it starts gets the batch again after the back-off: nothing is lost', async (t) => {
  const sb = sandbox('sc-otel-503');
  const rx = await otlpReceiver({ unavailable: 2 });
  t.teardown(() => rx.close());
  const env = { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none', OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_BLRP_SCHEDULE_DELAY: '10' };
  const x = await exporting(sb, env, policyWith(2000, { backoff_min_ms: 50, backoff_max_ms: 100, batch_retries: 2 }));
  t.teardown(() => x.stop());
  t.notOk((await x.call('shadow_status', {}, 1)).isError);
  await rx.until(() => rx.spans.some((s) => s.name === 'tools/call shadow_status') && rx.logs.some((l) => l.attributes['shadowcode.action'] === 'tool:shadow_status'), 'the call\'s span and its audit row');
  t.equal(rx.refused(), 2, 'the collector refused two requests first');
  const counts = tel()!.counts();
  t.equal(counts.traces.failed + counts.logs.failed, 0, 'no batch was lost');
  await x.stop();
  x.close();
});

t.test('a task: invoke_agent with its token use, each model request a chat CLIENT span whose traceparent goes out in the request headers', async (t) => {
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: [{ id: 'c1', name: 'list_dir', arguments: '{"path":"."}' }], usage: { input_tokens: 11, output_tokens: 3 } }, { text: 'all done', usage: { input_tokens: 17, output_tokens: 5 } }] });
  t.teardown(() => fake.close());
  const policy = shippedPolicy();
  const bench = await agentBench(() => new OpenAiCompatibleProvider({ id: 'fake', kind: 'openai-compatible', model: 'fake-model', url: new URL(`${fake.url}/v1`), loopback: true, key: null, contextTokens: 100_000, limits: policy.limits.models }), { policy });
  const deps: TelemetryDeps = {
    profileDir: bench.sb.profile,
    env: { ...bench.sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url },
    policy,
    gate: { policy, db: () => bench.engine.db() },
    request: (action, extra = {}) => ({ action, principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null, ...extra }),
    db: () => bench.engine.db(),
    secrets: () => bench.engine.secrets(),
  };
  const stop = await startTelemetryExport(deps, 'test', () => {});
  const job = bench.submit('list the project', { mode: 'plan', ceiling: 'read_only' });
  t.equal((await bench.settle(job.id)).state, 'succeeded');
  await bench.close();
  await stop!();

  const agent = rx.spans.find((s) => s.name === 'invoke_agent shadowcode') as GotSpan;
  t.match(agent.attributes, { 'gen_ai.operation.name': 'invoke_agent', 'shadowcode.job.id': job.id, 'gen_ai.usage.input_tokens': 28, 'gen_ai.usage.output_tokens': 8, 'shadowcode.job.state': 'succeeded' });
  const chats = rx.spans.filter((s) => s.name === 'chat fake-model');
  t.equal(chats.length, 2, 'one chat span per model request');
  for (const c of chats) {
    t.match(c, { kind: 3, parentSpanId: agent.spanId, traceId: agent.traceId });
    t.match(c.attributes, { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'fake-model', 'server.address': '127.0.0.1' });
  }
  t.match(chats.map((c) => c.attributes['gen_ai.usage.input_tokens']).sort(), [11, 17]);
  const sent = fake.requests.filter((r) => r.method === 'POST').map((r) => String(r.headers.traceparent));
  t.same(sent.sort(), chats.map((c) => `00-${c.traceId}-${c.spanId}-01`).sort(), 'each model request carried its chat span as traceparent');
  const tool = rx.spans.find((s) => s.name === 'execute_tool list_dir') as GotSpan;
  t.match(tool, { parentSpanId: agent.spanId, attributes: { 'gen_ai.tool.call.id': 'c1' } });
  t.ok(rx.spans.some((s) => s.parentSpanId === tool.spanId && s.attributes['shadowcode.action'] === 'task:tool.list_dir'), "the tool's decision is inside it");
  t.ok(rx.spans.some((s) => s.parentSpanId === agent.spanId && s.attributes['shadowcode.action'] === 'model:request'), 'each model request was decided inside the task');
});

t.test("a task's call to an external MCP server is a CLIENT span, and its traceparent goes out in params._meta", async (t) => {
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const w = await world();
  const log = join(w.sb.project, 'peer.log');
  await grant(w, 'peer', peerDef('ok', { env: { PEER_LOG: log } }));
  const deps: TelemetryDeps = {
    profileDir: w.sb.profile,
    env: { ...w.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    policy: w.policy,
    gate: w.gateEnv,
    request: (action, extra = {}) => ({ action, principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null, ...extra }),
    db: () => w.db,
    secrets: () => w.secrets,
  };
  const stop = await startTelemetryExport(deps, 'test', () => {});
  const ctx = taskCtx(w);
  const s = openTaskTools(w.deps, ctx);
  await s!.tools();
  const r = await s!.call('mcp__peer__echo', { text: 'hi' }, ctx);
  t.equal(r.is_error, false);
  await s!.close();
  await stop!();
  const span = rx.spans.find((x) => x.name === 'tools/call echo') as GotSpan;
  t.match(span, { kind: 3, attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'gen_ai.operation.name': 'execute_tool', 'network.transport': 'pipe' } });
  const line = readFileSync(log, 'utf8').split('\n').find((l) => l.startsWith('tools/call echo'));
  t.equal(line, `tools/call echo traceparent=00-${span.traceId}-${span.spanId}-01`, 'the server received our span as its parent, in params._meta');
  t.ok(rx.points.some((p) => p.metric === 'mcp.client.operation.duration' && p.attributes['gen_ai.tool.name'] === 'echo'), 'mcp.client.operation.duration is recorded');
  t.ok(rx.spans.some((x) => x.name === 'spawn mcp_server' && ['bwrap', 'none'].includes(String(x.attributes['shadowcode.sandbox.level']))), "the server's process is a spawn span with its sandbox level");
});

t.test('over the HTTP gateway of a library host: the MCP span covers the request, its decisions included, parented by params._meta', async (t) => {
  const sb = sandbox('sc-otel-http');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const sc = await open({ profile: sb.profile, workspace: sb.project, env: { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } });
  t.teardown(() => sc.close());
  const gw = await sc.serveHttp({ token: TOKEN });
  const client = await httpClient(gw.url, 'v2-modern');
  const r = await client.callTool({ name: 'shadow_status', arguments: {}, _meta: { traceparent: `00-${TRACE}-${PARENT}-01` } });
  t.notOk(r.isError);
  await client.close();
  await gw.close();
  t.notOk(tel(), "the host's last server closed: the export stopped with it");
  const span = rx.spans.find((s) => s.name === 'tools/call shadow_status') as GotSpan;
  t.match(span, { kind: 2, traceId: TRACE, parentSpanId: PARENT, attributes: { 'network.transport': 'tcp', 'http.response.status_code': 200, 'mcp.protocol.version': '2026-07-28' } });
  const inside = rx.spans.filter((s) => s.parentSpanId === span.spanId).map((s) => s.attributes['shadowcode.action']);
  t.ok(inside.includes('http:request') && inside.includes('tool:shadow_status'), 'the HTTP request and the call it carries are decided inside the span');
  t.equal(span.resource['shadowcode.role'], 'library');
});
