// A hostile model answer against the real CLI and the fake model server: too
// many tool calls in one answer, a cancel in the middle of a batch, and a huge
// refused call that must not sink the rest of the task.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { getJob } from '../../src/engine/jobs.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { agentBench, scripted } from '../fixtures/agent.js';
import { useFakeModel } from '../fixtures/agent-e2e.js';
import { BIN, cli, sandbox } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';

const CAP = shippedPolicy().limits.agent.tool_calls_per_answer;

function runJson(sb: ReturnType<typeof sandbox>, argv: string[]) {
  const child = spawn(process.execPath, [BIN, '--project', sb.project, '--json', 'run', ...argv], { cwd: sb.root, env: sb.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exit, events: () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l)), err: () => err };
}

t.test(`an answer of 10,000 tool calls runs the first ${CAP}, refuses the rest with SC_TOOL_CALL_LIMIT, and the task goes on`, async (t) => {
  const sb = sandbox('hostile-many');
  await cli(sb, ['--project', sb.project, 'trust']);
  const many = Array.from({ length: 10000 }, (_, i) => ({ id: `c${i}`, name: 'list_dir', arguments: '{}' }));
  const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: many, split: 4096 }, { tool_calls: [{ id: 'f', name: 'finish', arguments: JSON.stringify({ summary: 'listed' }) }] }] });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  const r = runJson(sb, ['list everything']);
  t.teardown(() => r.child.kill('SIGKILL'));
  t.equal(await r.exit, 0, r.err());
  const events = r.events();
  t.equal(events.filter((e) => e.kind === 'tool_call').length, CAP + 1, `${CAP} list_dir calls and the finish call ran`);
  t.match(events.find((e) => e.kind === 'tool_calls_refused')?.body, { code: 'SC_TOOL_CALL_LIMIT', made: 10000, run: CAP, refused: 10000 - CAP });
  t.match(events.find((e) => e.kind === 'model_response')?.body, { tool_calls_made: 10000 });
  const second = fake.requests[1]!.body.messages as Array<{ role: string; content: string; tool_calls?: unknown[] }>;
  const assistant = second.find((m) => m.role === 'assistant')!;
  t.equal(assistant.tool_calls?.length, CAP + 1, 'the conversation keeps the calls handled and the one carrying the refusal');
  const results = second.filter((m) => m.role === 'tool');
  t.equal(results.length, CAP + 1, 'every call kept has its result');
  t.match(results.at(-1)!.content, /^SC_TOOL_CALL_LIMIT: your answer made 10000 tool calls; at most 64 are taken from one answer/);
  t.match(events.find((e) => e.kind === 'answer')?.body, { state: 'succeeded', summary: 'listed' });
});

t.test('a refused 1 MiB call keeps its refusal in the conversation but not its bytes, and the task goes on', async (t) => {
  const sb = sandbox('hostile-huge');
  await cli(sb, ['--project', sb.project, 'trust']);
  const huge = JSON.stringify({ path: 'big.txt', content: 'z'.repeat(1024 * 1024) });
  const fake = await startFakeModel({
    format: 'openai',
    script: [
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: huge }], split: 65536 },
      { tool_calls: [{ id: 'f', name: 'finish', arguments: JSON.stringify({ summary: 'could not write at read_only' }) }] },
    ],
  });
  t.teardown(() => fake.close());
  useFakeModel(sb, 'openai', fake.url);
  // the default level, read_only: the write is refused by the policy
  const r = runJson(sb, ['--mode', 'build', 'write a big file']);
  t.teardown(() => r.child.kill('SIGKILL'));
  t.equal(await r.exit, 0, r.err());
  t.match(r.events().find((e) => e.kind === 'answer')?.body, { state: 'succeeded', summary: 'could not write at read_only' });
  t.notOk(existsSync(join(sb.project, 'big.txt')));
  const second = fake.requests[1]!;
  t.ok(second.raw.length < 64 * 1024, `the next request is small (${second.raw.length} bytes)`);
  const call = (second.body.messages as any[]).find((m) => m.role === 'assistant').tool_calls[0];
  t.equal(call.id, 'w1');
  t.same(JSON.parse(call.function.arguments), { omitted: `${huge.length} characters of arguments, not kept because the call was refused` });
  const result = (second.body.messages as any[]).find((m) => m.role === 'tool');
  t.match(result.content, /^SC_POLICY_DENIED: .*task-write-needs-workspace/, 'the model sees why it was refused');
});

t.test('a cancel in the middle of a batch of writes is answered between two calls', async (t) => {
  const writes = Array.from({ length: CAP }, (_, i) => ({ name: 'write_file', arguments: { path: `out/f${i}.txt`, content: `file ${i}\n` } }));
  const model = scripted([{ calls: writes }, { calls: [{ name: 'finish', arguments: { summary: 'wrote' } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('write many files');
  const written = () => (existsSync(join(b.sb.project, 'out')) ? readdirSync(join(b.sb.project, 'out')).length : 0);
  // Checked on every turn of the event loop: the loop must give one between two calls.
  while (written() === 0 && getJob(b.engine.db(), job.id)?.state !== 'succeeded') await new Promise((r) => setImmediate(r));
  const cancelled = await b.engine.jobs().cancel(job.id);
  t.equal(cancelled.state, 'cancelled');
  t.ok(written() < CAP, `the batch stopped after ${written()} of ${CAP} writes`);
  t.equal(model.requests.length, 1, 'no further model request was made');
});
