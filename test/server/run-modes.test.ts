// What a delegated task may do, end to end over stdio with the fake model: a
// read_only build task's write_file is refused by the gate and the file is
// untouched; plan mode records a plan that shadow://plan returns; review mode
// cannot write even on an --allow-write connection asking for workspace; a
// level above the connection's is refused at submission.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call, type Format, nextStop, useFakeModel } from '../fixtures/agent-e2e.js';
import { cli, sandbox } from '../fixtures/env.js';
import { startFakeModel, type Step } from '../fixtures/fake-model.js';
import { connect } from '../fixtures/mcp.js';

async function setup(t: any, format: Format, script: Step[], flags: string[]) {
  const sb = sandbox('modes');
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.project, 'keep.txt'), 'original\n');
  const fake = await startFakeModel({ format, script });
  t.teardown(() => fake.close());
  useFakeModel(sb, format, fake.url);
  const c = await connect(sb, 'v2-modern', flags);
  t.teardown(() => c.close());
  return { sb, fake, c };
}

const overwrite = { id: 'w1', name: 'write_file', arguments: JSON.stringify({ path: 'keep.txt', content: 'clobbered' }) };
const finish = (summary: string) => ({ tool_calls: [{ id: 'f1', name: 'finish', arguments: JSON.stringify({ summary }) }], finish: 'tool_calls' });

for (const format of ['openai', 'anthropic'] as Format[]) {
  t.test(`${format}: a read_only task's write_file is refused by the gate and the file is untouched`, async (t) => {
    const { sb, fake, c } = await setup(t, format, [{ tool_calls: [overwrite], finish: 'tool_calls' }, finish('refused')], ['--allow-write']);
    const run = await call(c, 'shadow_run', { prompt: 'overwrite keep.txt', mode: 'build' });
    t.equal(run.ceiling, 'read_only', 'permission_level defaults to read_only');
    const end = await nextStop(c, run.job_id);
    t.equal(end.answer.state, 'succeeded');
    t.equal(readFileSync(join(sb.project, 'keep.txt'), 'utf8'), 'original\n');
    const sent = JSON.stringify(fake.requests[1]?.body);
    t.match(sent, /SC_POLICY_DENIED: task:tool\.write_file denied by task-write-needs-workspace/, 'the model was told which rule refused it');
  });
}

// Modes are the engine's, whatever the model's wire format: each mode below runs once, in one
// format each (the write refusal above runs in both, since what the model is told is format-specific).
t.test('anthropic: plan mode records a plan that shadow://plan returns', async (t) => {
  const { c } = await setup(t, 'anthropic', [finish('1. read keep.txt\n2. change it')], []);
  const before = JSON.parse((await c.readResource({ uri: 'shadow://plan' })).contents[0]!.text as string);
  t.equal(before, null);
  const run = await call(c, 'shadow_run', { prompt: 'plan a change', mode: 'plan' });
  await nextStop(c, run.job_id);
  const plan = JSON.parse((await c.readResource({ uri: 'shadow://plan' })).contents[0]!.text as string);
  t.match(plan, { job_id: run.job_id, plan: { text: '1. read keep.txt\n2. change it' } });
});

t.test('openai: review mode cannot write even with --allow-write and permission_level workspace', async (t) => {
  const { sb, fake, c } = await setup(t, 'openai', [{ tool_calls: [overwrite], finish: 'tool_calls' }, finish('reviewed')], ['--allow-write']);
  const run = await call(c, 'shadow_run', { prompt: 'review keep.txt', mode: 'review', permission_level: 'workspace' });
  t.equal(run.ceiling, 'read_only');
  await nextStop(c, run.job_id);
  t.equal(readFileSync(join(sb.project, 'keep.txt'), 'utf8'), 'original\n');
  const offered = JSON.stringify(fake.requests[0]?.body.tools);
  t.notMatch(offered, /write_file|edit_file|run_command/, 'review is offered no writing tool');
  t.match(JSON.stringify(fake.requests[1]?.body), /write_file is not offered in review mode/);
});

t.test('permission_level above what the connection grants is refused at submission', async (t) => {
  const { fake, c } = await setup(t, 'openai', [finish('x')], []);
  const r = await c.callTool({ name: 'shadow_run', arguments: { prompt: 'write', mode: 'build', permission_level: 'workspace' } });
  t.equal(r.isError, true);
  t.match(r.content[0].text, /SC_POLICY_DENIED.*run-level-above-ceiling/);
  const m = await c.callTool({ name: 'shadow_run', arguments: { prompt: 'write', mode: 'build', model: 'nope' } });
  t.match(m.content[0].text, /^SC_MODEL_NOT_FOUND/);
  t.equal(fake.requests.length, 0);
});
