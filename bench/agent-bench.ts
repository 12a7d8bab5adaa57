/*
 * The agent runtime's own cost, against the fake model server (bundled and run
 * by bench/agent.mjs; not a test, no assertions).
 *
 *   per step: a model answer arrives (provider.turn resolves) ─► events, gate
 *     decisions, argument parsing, tool result, context estimate ─► the next
 *     provider.turn call; the tool's own run time is subtracted
 *   shadow_run ─► first model request: tools/call dispatch (schema, gate, submit)
 *     ─► queue ─► runner built (settings, provider) ─► gate model:request ─► provider.turn
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeLoop } from '../src/agent/loop.js';
import { createProvider } from '../src/agent/providers/index.js';
import { resolveModelEntry } from '../src/agent/task.js';
import { NATIVE_TOOLS } from '../src/agent/tools/index.js';
import type { ModelProvider } from '../src/agent/types.js';
import { Engine } from '../src/engine/engine.js';
import { getJob } from '../src/engine/jobs.js';
import { enforce } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { Connection } from '../src/server/connection.js';
import { callTool } from '../src/server/dispatch.js';
import { setTrust } from '../src/store/projects.js';
import { startFakeModel, type Step } from '../test/fixtures/fake-model.js';

const STEPS = Number(process.env.BENCH_STEPS ?? 200);
const RUNS = Number(process.env.BENCH_RUNS ?? 30);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] as number;

let toolMs = 0;
const list = NATIVE_TOOLS.get('list_dir')!;
const realRun = list.run.bind(list);
(list as { run: typeof list.run }).run = async (...a) => {
  const t0 = performance.now();
  try {
    return await realRun(...a);
  } finally {
    toolMs += performance.now() - t0;
  }
};

/** The provider, timed: when each request is made and when each answer is in. */
function timed(p: ModelProvider, marks: { calls: number[]; answers: number[]; tools: number[] }): ModelProvider {
  return Object.assign(Object.create(Object.getPrototypeOf(p)), p, {
    async turn(ticket: Parameters<ModelProvider['turn']>[0], req: Parameters<ModelProvider['turn']>[1]) {
      marks.calls.push(performance.now());
      marks.tools.push(toolMs);
      const r = await p.turn.call(p, ticket, req);
      marks.answers.push(performance.now());
      return r;
    },
  });
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'sc-bench-agent-'));
  const project = join(work, 'project');
  const profile = join(work, 'profile');
  mkdirSync(project);
  writeFileSync(join(project, 'a.txt'), 'x\n');
  const shipped = shippedPolicy();
  // Room for every scripted step (the shipped step limit is 40).
  const policy = { ...shipped, limits: { ...shipped.limits, agent: { ...shipped.limits.agent, max_steps: STEPS + 10 } } };
  const engine = new Engine(profile, policy, { PATH: process.env.PATH });
  await enforce({ policy, db: () => engine.db() }, { action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (t) => setTrust(t, engine.db(), project, 'workspace'));
  const script: Step[] = [
    ...Array.from({ length: STEPS }, (_, i) => ({ tool_calls: [{ id: `c${i}`, name: 'list_dir', arguments: '{}' }], finish: 'tool_calls' })),
    { tool_calls: [{ id: 'done', name: 'finish', arguments: JSON.stringify({ summary: 'done' }) }], finish: 'tool_calls' },
  ];
  const results: Record<string, unknown> = {};
  for (const format of ['openai', 'anthropic'] as const) {
    const fake = await startFakeModel({ format, script: [...script, ...Array.from({ length: RUNS }, () => ({ tool_calls: [{ id: 'f', name: 'finish', arguments: '{"summary":"ok"}' }], finish: 'tool_calls' }))] });
    const entry = format === 'openai' ? { id: 'fake', provider: 'openai-compatible' as const, model: 'fake-1', base_url: `${fake.url}/v1` } : { id: 'fake', provider: 'anthropic' as const, model: 'fake-1', base_url: fake.url };
    writeFileSync(join(profile, 'settings.json'), JSON.stringify({ models: [entry], default_model: 'fake' }), { mode: 0o600 });
    const marks = { calls: [] as number[], answers: [] as number[], tools: [] as number[] };
    const e = new Engine(profile, policy, { PATH: process.env.PATH });
    e.jobs().useAgentRunners((spec) => {
      const m = resolveModelEntry(e.freshSettings(), spec.modelId);
      return new NativeLoop(timed(createProvider(m, { env: {}, secrets: e.secrets(), policy }), marks), { policy, db: () => e.db(), gateEnv: { policy, db: () => e.db() }, env: {} });
    });
    const conn = new Connection({ transport: 'stdio', project, allowWrite: true, allowApprovals: true, engine: e });
    const wait = async (id: string) => {
      while (!['succeeded', 'failed', 'cancelled'].includes(getJob(e.db(), id)?.state ?? '')) await new Promise((r) => setTimeout(r, 2));
    };
    // Per step.
    const r = await callTool(conn, 'shadow_run', { prompt: 'list the directory many times', mode: 'build', permission_level: 'workspace' });
    await wait((r.structuredContent as { job_id: string }).job_id);
    const gaps: number[] = [];
    for (let i = 1; i < marks.calls.length; i++) gaps.push(marks.calls[i]! - marks.answers[i - 1]! - (marks.tools[i]! - marks.tools[i - 1]!));
    // shadow_run to the first model request.
    const firsts: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const before = marks.calls.length;
      const t0 = performance.now();
      const s = await callTool(conn, 'shadow_run', { prompt: 'finish at once', mode: 'plan' });
      while (marks.calls.length === before) await new Promise((res) => setImmediate(res));
      firsts.push(marks.calls[before]! - t0);
      await wait((s.structuredContent as { job_id: string }).job_id);
    }
    results[format] = { steps: gaps.length, step_ms_median: median(gaps), step_ms_p90: p90(gaps), first_request_ms_median: median(firsts), first_request_ms_p90: p90(firsts) };
    await e.shutdown();
    await fake.close();
  }
  await engine.shutdown();
  return results;
}

export const run = main;
