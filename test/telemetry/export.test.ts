/*
 * OpenTelemetry export from the real `mcp serve`, driven by the official v2 SDK client,
 * into a local OTLP/HTTP receiver that decodes the wire format.
 *
 *   mcp serve (built CLI; env: what it needs to run + OTEL_EXPORTER_OTLP_ENDPOINT,
 *   OTEL_EXPORTER_OTLP_PROTOCOL=http/json, OTEL_SERVICE_NAME)
 *     ◄─ tools/call shadow_test   (params._meta.traceparent of the caller's span)
 *     ◄─ tools/call shadow_approve
 *     ─► job runs ─► client closes ─► server flushes at exit
 *   receiver: the tools/call span under the caller's span, its guardrail decision, the
 *   approval with who decided, the job and its spawn, audit rows as log records matching
 *   state.db row for row, the metrics; no tool argument anywhere
 *
 * And with nothing configured, the same server loads no module of OpenTelemetry at all.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { BIN, cli, ROOT, sandbox, withCodeCache } from '../fixtures/env.js';
import { type GotSpan, otlpReceiver } from '../fixtures/otlp/receiver.js';

const RECORDER = join(ROOT, 'test', 'fixtures', 'otlp', 'loaded-modules.cjs');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const APPROVER_SPAN = '00f067aa0ba902c8';
// A tool argument no exported byte may hold.
const CANARY = 'argcanary-5d41402abc';

function loadedModules(stderr: string): string[] | undefined {
  const line = stderr.split('\n').find((l) => l.startsWith('loaded-opentelemetry-modules '));
  return line ? (JSON.parse(line.slice('loaded-opentelemetry-modules '.length)) as string[]) : undefined;
}

t.test('mcp serve configured only by OTEL_* variables exports the call, its decision, the approval, the job and the audit rows, and no tool argument', async (t) => {
  const sb = sandbox('sc-otel');
  await cli(sb, ['--project', sb.project, 'trust']);
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const env = { ...withCodeCache(sb.env), OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'shadowcode-e2e' } as Record<string, string>;
  let stderr = '';
  const transport = new StdioClientTransport({ command: process.execPath, args: ['--require', RECORDER, BIN, '--project', sb.project, 'mcp', 'serve', '--allow-write', '--allow-approvals'], env, stderr: 'pipe' });
  transport.stderr?.on('data', (d: Buffer) => (stderr += d));
  const client = new Client({ name: 'otel-e2e', version: '1.0.0' });
  await client.connect(transport, { timeout: 15000 });

  const submitted = await client.callTool({ name: 'shadow_test', arguments: { command: ['sh', '-c', `echo ${CANARY}`] }, _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, tracestate: 'caller=t61rcWkgMzE' } });
  t.notOk(submitted.isError, 'the test job is submitted');
  const sub = submitted.structuredContent as { job_id: string; approval: { id: string } };
  const approved = await client.callTool({ name: 'shadow_approve', arguments: { approval_id: sub.approval.id, decision: 'approve' }, _meta: { traceparent: `00-${TRACE_ID}-${APPROVER_SPAN}-01` } });
  t.notOk(approved.isError, 'the approval is decided');
  for (;;) {
    const r = await client.callTool({ name: 'shadow_jobs', arguments: { action: 'events', job_id: sub.job_id } });
    const state = (r.structuredContent as { job: { state: string } }).job.state;
    if (['succeeded', 'failed', 'cancelled'].includes(state)) {
      t.equal(state, 'succeeded', 'the job ran');
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await client.close();

  const name = (n: string) => (s: GotSpan) => s.name === n;
  await rx.until(() => rx.spans.some((s) => s.name === 'job test') && rx.points.some((p) => p.metric === 'mcp.server.operation.duration') && rx.logs.length > 0, 'the job span, the metrics and the audit log records');

  // The call: a SERVER span named by the conventions, a child of the caller's span from params._meta.
  const call = rx.spans.find(name('tools/call shadow_test')) as GotSpan;
  t.ok(call, 'a tools/call span for shadow_test');
  t.equal(call.kind, 2, 'a SERVER span');
  t.equal(call.traceId, TRACE_ID, "in the caller's trace");
  t.equal(call.parentSpanId, CALLER_SPAN, "its parent is the caller's span from params._meta.traceparent");
  t.equal(call.traceState, 'caller=t61rcWkgMzE', 'tracestate is carried on');
  t.match(call.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'shadow_test', 'gen_ai.operation.name': 'execute_tool', 'network.transport': 'pipe' });
  t.type(call.attributes['jsonrpc.request.id'], 'string', 'the JSON-RPC id, as a string');
  t.type(call.attributes['mcp.protocol.version'], 'string', 'the protocol revision');
  t.equal(call.resource['service.name'], 'shadowcode-e2e', 'OTEL_SERVICE_NAME names the service');

  // The gate's decision on that call: a guardrail span under it, with the policy hash and the rule.
  const status = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'status'])).stdout) as { policy: { hash: string } };
  const decision = rx.spans.find((s) => s.name === 'run_guardrail shadowcode-policy' && s.parentSpanId === call.spanId && s.attributes['shadowcode.action'] === 'tool:shadow_test') as GotSpan;
  t.ok(decision, 'the decision on the call is a guardrail span inside it');
  t.match(decision.attributes, { 'gen_ai.operation.name': 'run_guardrail', 'gen_ai.guardrail.verdict.type': 'allow', 'gen_ai.guardrail.security.policy.id': status.policy.hash, 'gen_ai.guardrail.target.subtype': 'tool_call' });
  t.type(decision.attributes['gen_ai.guardrail.security.policy.rule.id'], 'string', 'with the rule that decided');

  // The job, in the caller's trace, and the approval it waited for: escalated, then decided by this connection.
  const job = rx.spans.find(name('job test')) as GotSpan;
  t.equal(job.traceId, TRACE_ID, 'the job is in the same trace');
  t.equal(job.parentSpanId, call.spanId, 'submitted by the call');
  t.match(job.attributes, { 'shadowcode.job.id': sub.job_id, 'shadowcode.job.state': 'succeeded', 'process.exit.code': 0 });
  const escalate = rx.spans.find((s) => s.attributes['gen_ai.guardrail.verdict.type'] === 'escalate') as GotSpan;
  t.ok(escalate && escalate.parentSpanId === job.spanId, 'the pending approval is an escalate verdict of the job');
  const approval = rx.spans.find(name('approval command')) as GotSpan;
  t.equal(approval.parentSpanId, job.spanId, 'the approval is part of the job');
  t.match(approval.attributes, { 'shadowcode.approval.id': sub.approval.id, 'shadowcode.approval.decision': 'approved' });
  t.match(String(approval.attributes['shadowcode.approval.decided_by']), /^stdio:/, 'who decided: the connection that approved');
  t.type(approval.attributes['shadowcode.approval.wait_s'], 'number', 'how long it waited');
  const approveCall = rx.spans.find(name('tools/call shadow_approve')) as GotSpan;
  t.equal(approveCall.parentSpanId, APPROVER_SPAN, "the approving call is the approver's span's child");
  const run = rx.spans.find((s) => s.attributes['shadowcode.action'] === 'job:run') as GotSpan;
  t.equal(run.parentSpanId, job.spanId, "the run decision is the job's");
  const spawned = rx.spans.find(name('spawn command')) as GotSpan;
  t.equal(spawned.parentSpanId, run.parentSpanId, 'the process is started in the job');
  t.ok(['bwrap', 'none'].includes(String(spawned.attributes['shadowcode.sandbox.level'])), 'with its sandbox level');
  t.equal(spawned.attributes['process.executable.name'], 'sh');

  // Audit rows: one log record per row, with the sequence number and the chain hash of the row in state.db.
  await rx.until(() => rx.logs.some((l) => l.attributes['shadowcode.action'] === 'job:run'), 'the job:run audit row');
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT seq, kind, hash FROM audit').all() as Array<{ seq: number; kind: string; hash: string }>;
  const bySeq = new Map(rows.map((r) => [r.seq, r]));
  t.ok(rx.logs.length >= 5, `the audit rows went out (${rx.logs.length})`);
  for (const l of rx.logs) {
    const row = bySeq.get(Number(l.attributes['shadowcode.audit.seq']));
    t.ok(row && row.hash === l.attributes['shadowcode.audit.hash'] && row.kind === l.attributes['shadowcode.audit.kind'], `log record ${l.attributes['shadowcode.audit.seq']} is that row, hash and all`);
  }
  t.ok(rx.logs.some((l) => l.eventName === 'shadowcode.audit.decision' && l.attributes['shadowcode.action'] === 'tool:shadow_approve.approve'), 'the approval decision is among them');

  // Metrics, with the conventions' buckets.
  const hist = rx.points.find((p) => p.metric === 'mcp.server.operation.duration' && p.attributes['gen_ai.tool.name'] === 'shadow_test');
  t.same(hist?.bounds, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300], 'mcp.server.operation.duration uses the conventions\' buckets');
  t.equal(hist?.unit, 's');
  t.ok(rx.points.some((p) => p.metric === 'shadowcode.gate.decisions' && p.attributes['gen_ai.guardrail.verdict.type'] === 'escalate'), 'decisions are counted by verdict');
  t.ok(rx.points.some((p) => p.metric === 'shadowcode.approval.wait.duration' && p.attributes['shadowcode.approval.decision'] === 'approved'), 'approval wait time is measured');

  // Nothing sensitive by default: the argument never left.
  const everything = JSON.stringify({ spans: rx.spans.map((s) => ({ ...s, startNs: 0, endNs: 0 })), logs: rx.logs, points: rx.points });
  t.notOk(everything.includes(CANARY), 'no tool argument is exported');
  t.ok(rx.requests.every((r) => r.encoding === 'json'), 'OTEL_EXPORTER_OTLP_PROTOCOL=http/json is honoured');
  t.ok(loadedModules(stderr)?.some((p) => p.endsWith('otel.cjs')), 'the OpenTelemetry packages (dist/otel.cjs) were loaded in this process');
});

/** `mcp serve` exporting to a receiver, spoken to in raw JSON lines (so the plain shapes stdio-first and stdio-calls take can be sent as they are). */
async function rawServe(t: any, name: string) {
  const sb = sandbox(name);
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const env = { ...withCodeCache(sb.env), OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
  const child = spawn(process.execPath, [BIN, '--project', sb.project, 'mcp', 'serve'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', () => {});
  return {
    rx,
    send: (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`),
    answered: (id: number) =>
      new Promise<void>((r) => {
        const check = () => (new RegExp(`"id":${id}\\}`).test(stdout) ? r() : setTimeout(check, 20));
        check();
      }),
    /** Ends its stdin; the exit code. */
    end: () => (child.stdin.end(), new Promise<number | null>((r) => child.on('close', r))),
  };
}

/** The opening a 2025-era client sends, answered by stdio-first itself: initialize, initialized, tools/list (id 2). */
function opening(s: Awaited<ReturnType<typeof rawServe>>): Promise<void> {
  s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  return s.answered(2);
}

t.test('the first tools/list, answered over stdio before the SDK loads, is still a SERVER span', async (t) => {
  const s = await rawServe(t, 'sc-otel-first');
  const rx = s.rx;
  // The plain shapes the opening answers itself (src/server/stdio-first.ts).
  await opening(s);
  t.equal(await s.end(), 0);
  const list = rx.spans.find((s) => s.name === 'tools/list');
  t.ok(list, 'a tools/list span');
  t.match(list?.attributes, { 'mcp.method.name': 'tools/list', 'jsonrpc.request.id': '2', 'mcp.protocol.version': '2025-06-18', 'network.transport': 'pipe' });
  t.equal(list?.kind, 2, 'a SERVER span');
});

t.test('a plain tools/call, answered past the SDK, is the same SERVER span as one the SDK answers', async (t) => {
  const s = await rawServe(t, 'sc-otel-plain');
  const rx = s.rx;
  await opening(s);
  // The SDK has the connection once the list is out; a call with a _meta of any kind goes through it.
  s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'shadow_status', arguments: {}, _meta: {} } });
  await s.answered(3);
  // Plain (nothing but a name and arguments): taken past the SDK (src/server/stdio-calls.ts).
  s.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'shadow_status', arguments: {} } });
  await s.answered(4);
  t.equal(await s.end(), 0);
  const spans = rx.spans.filter((s) => s.name === 'tools/call shadow_status');
  const viaSdk = spans.find((s) => s.attributes['jsonrpc.request.id'] === '3');
  const plain = spans.find((s) => s.attributes['jsonrpc.request.id'] === '4');
  t.ok(viaSdk && plain, `a span for each call: ${JSON.stringify(spans.map((s) => s.attributes['jsonrpc.request.id']))}`);
  t.equal(plain?.kind, 2, 'a SERVER span');
  t.match(plain?.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'shadow_status', 'gen_ai.operation.name': 'execute_tool', 'mcp.protocol.version': '2025-06-18', 'network.transport': 'pipe' });
  const without = (a: Record<string, unknown> | undefined) => Object.fromEntries(Object.entries(a ?? {}).filter(([k]) => k !== 'jsonrpc.request.id'));
  t.same(without(plain?.attributes), without(viaSdk?.attributes), 'the same attributes as the span of the call the SDK answered');
  t.ok(rx.spans.some((s) => s.name.startsWith('run_guardrail ') && s.parentSpanId === plain?.spanId), "the call's gate decision is its child");
});

t.test('with no telemetry configured, mcp serve loads no OpenTelemetry module', async (t) => {
  const sb = sandbox('sc-otel-off');
  const child = spawn(process.execPath, ['--require', RECORDER, BIN, '--project', sb.project, 'mcp', 'serve'], { env: withCodeCache(sb.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.on('data', (d) => (stdout += d));
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'shadow_status', arguments: {}, _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } } };
  child.stdin.end(`${JSON.stringify(init)}\n${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${JSON.stringify(call)}\n`);
  const code = await new Promise<number | null>((r) => child.on('close', r));
  t.equal(code, 0);
  t.match(stdout, /"structuredContent":.*"id":2\}/, 'the call was answered');
  t.same(loadedModules(stderr), [], 'not one @opentelemetry module was loaded');
});
