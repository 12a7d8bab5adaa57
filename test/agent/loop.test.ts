// The native task loop over a scripted model: what counts as a tool turn,
// what is never run, the limits, context trimming, modes and redaction.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { capText, fitContext, parseArgs } from '../../src/agent/loop.js';
import type { Message } from '../../src/agent/types.js';
import { reviewTask } from '../../src/engine/history.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { registerSecretValue } from '../../src/policy/redact.js';
import { agentBench, answerOf, scripted } from '../fixtures/agent.js';

const toolMessages = (m: Message[]) => m.filter((x) => x.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;

t.test('a build task reads a file, edits it and finishes; the change is checkpointed and reviewable', async (t) => {
  const model = scripted([
    { calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
    { calls: [{ name: 'edit_file', arguments: { path: 'a.txt', old_text: 'two', new_text: 'TWO' } }] },
    { calls: [{ name: 'finish', arguments: { summary: 'changed two to TWO' } }] },
  ]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, 'a.txt'), 'one\ntwo\nthree\n');
  const job = b.submit('make two loud');
  t.equal(job.state, 'queued', 'submission returns at once, queued');
  const done = await b.settle(job.id);
  t.equal(done.state, 'succeeded');
  t.equal(answerOf(b, job.id).summary, 'changed two to TWO');
  t.equal(readFileSync(join(b.sb.project, 'a.txt'), 'utf8'), 'one\nTWO\nthree\n');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /1\tone\n2\ttwo\n3\tthree/, 'the model saw numbered lines');
  const kinds = b.events(job.id).map((e) => e.kind);
  for (const k of ['submitted', 'started', 'model_request', 'model_response', 'tool_call', 'tool_result', 'checkpoint', 'answer']) t.ok(kinds.includes(k), `a ${k} event is recorded`);
  const review = reviewTask(b.engine.db(), b.sb.project, job.id, 100000, 100000) as { files: Array<{ path: string; diff: string }> };
  t.equal(review.files[0]?.path, 'a.txt');
  t.match(review.files[0]?.diff, /-two\n\+TWO/);
});

t.test('a read_only task that calls write_file is refused by the gate, naming the rule, and the file is untouched', async (t) => {
  const model = scripted([{ calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'gone' } }] }, { calls: [{ name: 'finish', arguments: { summary: 'could not' } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, 'a.txt'), 'keep');
  const job = b.submit('overwrite', { ceiling: 'read_only' });
  t.equal((await b.settle(job.id)).state, 'succeeded');
  const result = toolMessages(model.requests[1]!.messages)[0]!;
  t.equal(result.is_error, true);
  t.match(result.content, /SC_POLICY_DENIED.*task-write-needs-workspace/);
  t.equal(readFileSync(join(b.sb.project, 'a.txt'), 'utf8'), 'keep');
  t.notOk(b.events(job.id).some((e) => e.kind === 'checkpoint'), 'no checkpoint was made');
});

t.test('arguments that do not parse are never run; the model gets a tool error and may retry', async (t) => {
  const model = scripted([
    { calls: [{ name: 'write_file', arguments: '{"path": "x.txt", "content": "half' }] },
    { calls: [{ name: 'write_file', arguments: '[1,2]' }] },
    { calls: [{ name: 'finish', arguments: { summary: 'gave up' } }] },
  ]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('write x');
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /^SC_TOOL_ARGS_INVALID: the arguments are not valid JSON/);
  t.match(toolMessages(model.requests[2]!.messages)[1]!.content, /^SC_TOOL_ARGS_INVALID: the arguments are JSON but not an object/);
  t.notOk(existsSync(join(b.sb.project, 'x.txt')));
});

t.test('a tool turn is whatever calls accumulated, even when the stop reason says the answer ended', async (t) => {
  const model = scripted([{ calls: [{ name: 'list_dir', arguments: '' }], stop: 'end' }, { calls: [{ name: 'finish', arguments: { summary: 'listed' } }], stop: 'end' }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, 'f.txt'), '');
  const job = b.submit('list');
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.equal(model.requests.length, 2, 'the calls ran and the conversation went on');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /f\.txt\tfile/, 'empty arguments are {}');
});

t.test("a turn stopped by the length limit runs none of its calls; two in a row fail the task", async (t) => {
  const model = scripted([
    { calls: [{ name: 'write_file', arguments: { path: 'big.txt', content: 'looks complete' } }], stop: 'length' },
    { calls: [{ name: 'write_file', arguments: '{"path": "big.txt", "con' }], stop: 'length' },
  ]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('write big');
  const done = await b.settle(job.id);
  t.equal(done.state, 'failed');
  t.equal(answerOf(b, job.id).reason.code, 'SC_MODEL_TURN_INCOMPLETE');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /^SC_MODEL_TURN_INCOMPLETE/);
  t.notOk(existsSync(join(b.sb.project, 'big.txt')), 'a complete-looking call cut by length did not run');
});

t.test('plan mode offers only reading tools and finish, and its finish records the plan', async (t) => {
  const model = scripted([{ calls: [{ name: 'write_file', arguments: { path: 'p.txt', content: 'x' } }] }, { calls: [{ name: 'finish', arguments: { summary: '1. read\n2. change' } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('plan it', { mode: 'plan' });
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.same(model.requests[0]!.tools, ['read_file', 'list_dir', 'search_text', 'finish']);
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /SC_TOOL_UNKNOWN: write_file is not offered in plan mode/);
  t.notOk(existsSync(join(b.sb.project, 'p.txt')));
  t.same(b.events(job.id).find((e) => e.kind === 'plan')?.body, { text: '1. read\n2. change' });
});

t.test('review mode cannot write even when the task ceiling is workspace', async (t) => {
  const model = scripted([{ calls: [{ name: 'edit_file', arguments: { path: 'r.txt', old_text: 'a', new_text: 'b' } }] }, { text: 'looks fine' }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, 'r.txt'), 'a');
  const job = b.submit('review', { mode: 'review', ceiling: 'workspace' });
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.equal(answerOf(b, job.id).summary, 'looks fine', 'an answer without a tool call ends the task');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /not offered in review mode/);
  t.equal(readFileSync(join(b.sb.project, 'r.txt'), 'utf8'), 'a');
});

t.test('a task that never finishes stops at the step limit', async (t) => {
  const base = shippedPolicy();
  const policy = { ...base, limits: { ...base.limits, agent: { ...base.limits.agent, max_steps: 3 } } };
  const model = scripted(Array.from({ length: 10 }, () => ({ calls: [{ name: 'list_dir', arguments: {} }] })));
  const b = await agentBench(() => model, { policy });
  t.teardown(() => b.close());
  const job = b.submit('loop forever');
  t.equal((await b.settle(job.id)).state, 'failed');
  t.equal(model.requests.length, 3);
  t.match(answerOf(b, job.id).reason, { code: 'SC_LIMIT_REACHED', message: /3 model requests/ });
});

t.test('a task past its token limit stops before the next request', async (t) => {
  const base = shippedPolicy();
  const policy = { ...base, limits: { ...base.limits, agent: { ...base.limits.agent, total_tokens: 1000 } } };
  const model = scripted([{ calls: [{ name: 'list_dir', arguments: {} }], usage: { input_tokens: 900, output_tokens: 200 } }]);
  const b = await agentBench(() => model, { policy });
  t.teardown(() => b.close());
  const job = b.submit('spend');
  t.equal((await b.settle(job.id)).state, 'failed');
  t.equal(model.requests.length, 1);
  t.match(answerOf(b, job.id).reason, { code: 'SC_LIMIT_REACHED', message: /1100 tokens/ });
});

t.test('a conversation that outgrows the context has its oldest tool outputs trimmed, or fails clearly', async (t) => {
  const base = shippedPolicy();
  const l = { ...base.limits.agent, max_output_tokens: 100, chars_per_token: 1, trimmed_output_chars: 20 };
  const sys = 's';
  const msgs: Message[] = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: '', tool_calls: [{ id: '1', name: 'read_file', arguments: '{}' }] },
    { role: 'tool', tool_call_id: '1', name: 'read_file', content: 'a'.repeat(500) },
    { role: 'assistant', content: '', tool_calls: [{ id: '2', name: 'read_file', arguments: '{}' }] },
    { role: 'tool', tool_call_id: '2', name: 'read_file', content: 'b'.repeat(500) },
  ];
  const trimmed = new Set<number>();
  t.equal(fitContext(sys, msgs, [], 900, l, trimmed), 1, 'one output trimmed');
  t.match(msgs[2]!.content, /^a{20}\n\[trimmed to fit the context: 480 characters dropped\]/);
  t.equal(msgs[4]!.content, 'b'.repeat(500), 'the newest output is kept');
  t.equal(fitContext(sys, msgs, [], 150, l, trimmed), null, 'nothing left to trim: it does not fit');

  const model = scripted([{ calls: [{ name: 'read_file', arguments: { path: 'big.txt' } }] }, { calls: [{ name: 'finish', arguments: { summary: 'x' } }] }], { contextTokens: 14000 });
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, 'big.txt'), 'line of text\n'.repeat(3000));
  const job = b.submit('read big');
  t.equal((await b.settle(job.id)).state, 'succeeded');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /\[trimmed to fit the context: \d+ characters dropped\]$/, 'the big output was trimmed before the next request');
  t.equal(b.events(job.id).filter((e) => e.kind === 'model_request')[1]?.body.trimmed_outputs, 1);

  const never = scripted([], { contextTokens: 14000 });
  const b2 = await agentBench(() => never);
  t.teardown(() => b2.close());
  const huge = b2.submit('x'.repeat(60000));
  t.equal((await b2.settle(huge.id)).state, 'failed');
  t.equal(never.requests.length, 0, 'the over-long request was never sent');
  t.match(answerOf(b2, huge.id).reason, { code: 'SC_LIMIT_REACHED', message: /no longer fits the model's context of 14000 tokens/ });
});

t.test('known secret values are kept out of stored events and of what the model is sent back', async (t) => {
  const secret = 'sk-test-0123456789abcdef';
  registerSecretValue(secret);
  const model = scripted([{ calls: [{ name: 'read_file', arguments: { path: '.env' } }] }, { calls: [{ name: 'finish', arguments: { summary: `the key is ${secret}` } }] }]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  writeFileSync(join(b.sb.project, '.env'), `KEY=${secret}\n`);
  const job = b.submit(`use ${secret} for this`);
  await b.settle(job.id);
  t.notMatch(JSON.stringify(b.events(job.id)), secret, 'no event holds the value');
  t.notMatch(JSON.stringify(model.requests), secret, 'neither the prompt nor the tool result sent to the model holds it');
  t.match(toolMessages(model.requests[1]!.messages)[0]!.content, /KEY=\[redacted\]/);
});

t.test('a failing model request fails the task with its code; a cancelled one is cancelled', async (t) => {
  const { ScError } = await import('../../src/errors.js');
  const b = await agentBench((id) => (id.endsWith('x') ? scripted([]) : scripted([{ throws: new ScError('SC_TIMEOUT', 'no first byte within 5000 ms') }])));
  t.teardown(() => b.close());
  const job = b.submit('fail');
  t.equal((await b.settle(job.id)).state, 'failed');
  t.match(answerOf(b, job.id).reason, { code: 'SC_TIMEOUT', message: /no first byte/ });

  const hang = await agentBench(() => scripted([{ hang: true }]));
  t.teardown(() => hang.close());
  const h = hang.submit('hang');
  await hang.settle(h.id, 300).catch(() => {});
  const cancelled = await hang.engine.jobs().cancel(h.id);
  t.equal(cancelled.state, 'cancelled', 'cancel waits for the loop to stop');
});

t.test('a remote model is not asked without the project\'s network permission', async (t) => {
  const model = scripted([{ text: 'never' }], { remote: true });
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('ask far away');
  t.equal((await b.settle(job.id)).state, 'failed');
  t.equal(model.requests.length, 0, 'no request was made');
  t.match(answerOf(b, job.id).reason, { code: 'SC_POLICY_DENIED', message: /remote-model-needs-network/ });
});

t.test('parseArgs and capText', async (t) => {
  t.same(parseArgs(''), { ok: true, value: {} });
  t.same(parseArgs('  '), { ok: true, value: {} });
  t.equal(parseArgs('null').ok, false);
  t.equal(parseArgs('{"a":').ok, false);
  t.equal(capText('abc', 10), 'abc');
  const c = capText('x'.repeat(1000), 100);
  t.ok(c.length <= 100);
  t.match(c, /\[\.\.\. \d+ of 1000 characters omitted \.\.\.\]/);
});

t.test('usage counts are stored as numbers in model_response and answer events, never masked', async (t) => {
  const model = scripted([
    { calls: [{ name: 'list_dir', arguments: {} }], usage: { input_tokens: 120, output_tokens: 30 } },
    { calls: [{ name: 'finish', arguments: { summary: 'ok' } }], usage: { input_tokens: 200, output_tokens: 12 } },
  ]);
  const b = await agentBench(() => model);
  t.teardown(() => b.close());
  const job = b.submit('count');
  t.equal((await b.settle(job.id)).state, 'succeeded');
  const responses = b.events(job.id).filter((e) => e.kind === 'model_response').map((e) => e.body.usage);
  t.same(responses, [{ input_tokens: 120, output_tokens: 30 }, { input_tokens: 200, output_tokens: 12 }]);
  t.same(answerOf(b, job.id).usage, { input_tokens: 320, output_tokens: 42 });
});
