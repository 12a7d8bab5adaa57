// The input schemas hosts are shown: derived from schemas/tools/, accepted by
// the hosts' model APIs, and never stricter or looser than a description of
// the full schema the server still enforces.
import t from 'tap';
import { TOOL_SCHEMAS } from '../../gen/tools/catalog.js';
import { hostInputSchema } from '../../src/schema/host-schema.js';
import { hostViolations } from '../fixtures/host-rules.js';

const tools = Object.entries(TOOL_SCHEMAS as Record<string, any>);

t.test('every served schema passes the Anthropic and OpenAI input-schema rules', async (t) => {
  t.equal(tools.length, 17);
  for (const [name, full] of tools) t.same(hostViolations(hostInputSchema(name, full)), [], name);
  t.ok(tools.some(([, full]) => hostViolations(full).length > 0), 'the rules do catch the full schemas some tools have');
});

t.test('the served schema keeps every property, required list and additionalProperties of the full one', async (t) => {
  for (const [name, full] of tools) {
    const served = hostInputSchema(name, full);
    t.same(Object.keys(served.properties as object), Object.keys(full.properties ?? {}), name);
    t.same(served.required, full.required ?? [], name);
    t.equal(served.additionalProperties, full.additionalProperties, name);
    for (const [p, s] of Object.entries(full.properties ?? {}) as Array<[string, any]>) {
      const { description: _d, type: _t, ...rest } = (served.properties as any)[p];
      const { description: _fd, type: _ft, ...fullRest } = s;
      t.same(rest, fullRest, `${name}.${p}: only the description (and a const's type) differ`);
    }
  }
});

t.test('per-action rules move into the descriptions of the properties they require', async (t) => {
  const memory = hostInputSchema('shadow_memory', TOOL_SCHEMAS.shadow_memory).properties as any;
  t.equal(memory.text.description, 'What to append. Required when action is "append".');
  t.equal(memory.expected_hash.description, 'The hash from the read this replacement is based on. Required when action is "replace".');
  t.equal(memory.task_id.description, 'Required when scope is "task".');
  const goal = hostInputSchema('shadow_goal', TOOL_SCHEMAS.shadow_goal).properties as any;
  t.equal(goal.goal_id.description, 'Required when action is "get", "advance" or "abandon".');
  const cp = hostInputSchema('shadow_checkpoint', TOOL_SCHEMAS.shadow_checkpoint).properties as any;
  t.equal(cp.checkpoint_id.description, 'Give at least one of checkpoint_id or task_id.');
  t.equal(cp.task_id.description, 'Give at least one of checkpoint_id or task_id.');
  const rollback = hostInputSchema('shadow_rollback', TOOL_SCHEMAS.shadow_rollback).properties as any;
  t.same(rollback.confirm, { type: 'boolean', const: true, description: 'Must be true: a rollback overwrites files.' });
  t.ok('allOf' in TOOL_SCHEMAS.shadow_memory, 'the full schema itself is untouched');
});

t.test('a top-level shape it cannot restate is an error, never silently dropped', async (t) => {
  const base = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } };
  t.throws(() => hostInputSchema('x', { ...base, oneOf: [{ required: ['a'] }, { required: ['b'] }] }), /top-level oneOf/);
  t.throws(() => hostInputSchema('x', { ...base, not: { required: ['a'] } }), /top-level not/);
  t.throws(() => hostInputSchema('x', { ...base, allOf: [{ required: ['a'] }] }), /an allOf entry other than/);
  t.throws(() => hostInputSchema('x', { ...base, allOf: [{ if: { properties: { a: { const: 1 } }, required: ['a'] }, then: { required: ['b'] }, else: { required: ['a'] } }] }), /an allOf entry other than/);
  t.throws(() => hostInputSchema('x', { ...base, allOf: [{ if: { properties: { a: { const: 1 } } }, then: { required: ['b'] } }] }), /an allOf entry other than/, 'an if that also holds when a is absent');
  t.throws(() => hostInputSchema('x', { ...base, anyOf: [{ required: ['a', 'b'] }, { required: ['b'] }] }), /an anyOf entry other than/);
  t.throws(() => hostInputSchema('x', { ...base, anyOf: [{ required: ['c'] }, { required: ['b'] }] }), /names c, which is not a property/);
});

t.test('the native task tools are offered to models in a form their APIs accept', async (t) => {
  const { NATIVE_TOOLS, toolSpec } = await import('../../src/agent/tools/index.js');
  t.equal(NATIVE_TOOLS.size, 7);
  for (const tool of NATIVE_TOOLS.values()) {
    const spec = toolSpec(tool);
    t.same(hostViolations(spec.input_schema as any), [], spec.name);
    t.ok(spec.description.length > 20, `${spec.name} has a description`);
  }
});
