/*
 * One trace across two processes: a tools/call handled by `mcp serve` and the job it submits
 * to the shared engine (`engine start --foreground`), both exporting to one local receiver.
 *
 *   client ─► tools/call shadow_test (params._meta.traceparent) ─► mcp serve: SERVER span
 *     ─► submit frame over the engine socket, with that span's traceparent
 *     ─► engine: its gate decision on the submission, the job, its approval, its spawn
 *   receiver: the engine's spans are the children of the mcp serve span, in the caller's trace
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import t from 'tap';
import { startEngine } from '../fixtures/engine.js';
import { BIN, cli, sandbox, withCodeCache } from '../fixtures/env.js';
import { type GotSpan, otlpReceiver } from '../fixtures/otlp/receiver.js';

const TRACE_ID = '5cf92f3577b34da6a3ce929d0e0e4737';
const CALLER_SPAN = '10f067aa0ba902b7';

t.test("a job the shared engine runs joins the trace of the call that submitted it: the engine's spans are that call's children", async (t) => {
  const sb = sandbox('sc-otel-engine');
  await cli(sb, ['--project', sb.project, 'trust']);
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const env = { ...withCodeCache(sb.env), OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none', OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_BLRP_SCHEDULE_DELAY: '50' } as Record<string, string>;
  await startEngine(t, { ...sb, env });

  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, '--project', sb.project, 'mcp', 'serve', '--allow-write', '--allow-approvals'], env, stderr: 'pipe' });
  const client = new Client({ name: 'otel-engine', version: '1.0.0' });
  await client.connect(transport, { timeout: 15000 });
  t.teardown(() => client.close());

  const submitted = await client.callTool({ name: 'shadow_test', arguments: { command: ['sh', '-c', 'exit 0'] }, _meta: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } });
  t.notOk(submitted.isError, 'the test job is submitted');
  const sub = submitted.structuredContent as { job_id: string; approval: { id: string } };
  t.notOk((await client.callTool({ name: 'shadow_approve', arguments: { approval_id: sub.approval.id, decision: 'approve' } })).isError, 'the approval is decided');

  await rx.until(() => rx.spans.some((s) => s.name === 'job test' && s.attributes['shadowcode.job.state'] !== undefined) && rx.spans.some((s) => s.name === 'tools/call shadow_test'), 'the call span and the ended job span');
  const call = rx.spans.find((s) => s.name === 'tools/call shadow_test') as GotSpan;
  t.equal(call.resource['shadowcode.role'], 'mcp-serve', 'the call span comes from mcp serve');
  t.equal(call.parentSpanId, CALLER_SPAN, "the call is the caller's span's child");

  const job = rx.spans.find((s) => s.name === 'job test') as GotSpan;
  t.equal(job.resource['shadowcode.role'], 'engine', 'the job span comes from the engine process');
  t.not(job.resource['service.instance.id'], call.resource['service.instance.id'], 'another process');
  t.equal(job.traceId, TRACE_ID, "the job is in the caller's trace");
  t.equal(job.parentSpanId, call.spanId, 'the job is the child of the call that submitted it, across the engine socket');
  t.equal(job.attributes['shadowcode.job.id'], sub.job_id);

  const admitted = rx.spans.find((s) => s.resource['shadowcode.role'] === 'engine' && s.attributes['shadowcode.action'] === 'engine:submit') as GotSpan;
  t.ok(admitted, "the engine's gate decision on the submission is exported");
  t.equal(admitted.parentSpanId, call.spanId, 'and is the call span\'s child too');
  const approval = rx.spans.find((s) => s.name === 'approval command') as GotSpan;
  t.equal(approval?.parentSpanId, job.spanId, 'the approval is part of the job');
});
