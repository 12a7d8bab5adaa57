// A hostile stream's shape cannot make parsing quadratic: one 8 MiB line in
// 1 KiB pieces, and an answer of 470,000 tool-call ids, each parse in CPU time
// linear in their size. The bound (2 CPU-seconds) is generous on purpose:
// linear parsing needs a small fraction of it, quadratic parsing minutes.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { MessagesAccumulator } from '../../../src/agent/providers/anthropic.js';
import { ChatAccumulator } from '../../../src/agent/providers/openai.js';
import { SseReader } from '../../../src/agent/providers/sse.js';
import { MAX_KEPT_CALLS } from '../../../src/agent/types.js';
import { ROOT, TS_IMPORT } from '../../fixtures/env.js';
import { startFakeModel } from '../../fixtures/fake-model.js';

const MIB = 1024 * 1024;
const CPU_BOUND_S = 2;

function cpuSeconds<T>(work: () => Promise<T>): Promise<{ value: T; cpu: number }> {
  const before = process.cpuUsage();
  return work().then((value) => {
    const d = process.cpuUsage(before);
    return { value, cpu: (d.user + d.system) / 1e6 };
  });
}

const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
const tail = chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) + chunk({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } }) + 'data: [DONE]\n\n';

/** One text delta whose data line is 8 MiB. */
function longLineBody(): { body: string; text: string } {
  const text = 'x'.repeat(8 * MIB);
  return { body: chunk({ choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }) + tail, text };
}

/** 470,000 tool calls, each only an id, 1000 to a chunk: about 8 MB. */
function manyIdsBody(n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i += 1000) {
    const calls: Array<{ id: string }> = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) calls.push({ id: `i${j}` });
    parts.push(chunk({ choices: [{ index: 0, delta: { tool_calls: calls }, finish_reason: null }] }));
  }
  return parts.join('') + chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }) + 'data: [DONE]\n\n';
}

interface Measured {
  cpu_s: number;
  text_chars: number;
  stop: string;
  calls: number;
  made: number;
  first: string | null;
  last: string | null;
}

/** One turn against the fake model, made by a process of its own so only the client's CPU time is counted. */
function turnInChild(url: string): Promise<Measured> {
  const child = spawn(process.execPath, [...TS_IMPORT, join(ROOT, 'test', 'fixtures', 'turn-cpu.ts'), url], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as Measured) : reject(new Error(`turn-cpu exited ${code}: ${err}`)))));
}

t.test('the event-stream reader takes an 8 MiB line in 1 KiB pieces in linear time', async (t) => {
  const { body, text } = longLineBody();
  const bytes = Buffer.from(body);
  let data = '';
  const { cpu } = await cpuSeconds(async () => {
    const r = new SseReader((e) => {
      if (!data) data = e.data;
    });
    for (let at = 0; at < bytes.length; at += 1024) r.push(bytes.subarray(at, at + 1024));
    r.end();
  });
  t.equal(JSON.parse(data).choices[0].delta.content.length, text.length, "the whole line arrived as one event");
  t.ok(cpu < CPU_BOUND_S, `parsed in ${cpu.toFixed(2)} CPU-s`);
});

t.test('an OpenAI-compatible model streaming an 8 MiB line in 1 KiB writes is read in linear time', async (t) => {
  const { body, text } = longLineBody();
  const fake = await startFakeModel({ format: 'openai', script: [{ raw: body, piece: 1024 }] });
  t.teardown(() => fake.close());
  const m = await turnInChild(fake.url);
  t.equal(m.text_chars, text.length);
  t.equal(m.stop, 'end');
  t.ok(m.cpu_s < CPU_BOUND_S, `fetched and parsed in ${m.cpu_s.toFixed(2)} CPU-s`);
});

t.test('an answer of 470,000 tool-call ids is read in linear time; the first calls are kept in order, the rest counted', async (t) => {
  const n = 470000;
  const body = manyIdsBody(n);
  const fake = await startFakeModel({ format: 'openai', script: [{ raw: body, piece: 1024 }] });
  t.teardown(() => fake.close());
  const m = await turnInChild(fake.url);
  t.equal(m.calls, MAX_KEPT_CALLS, 'memory stays bounded: only the calls the loop can use are kept');
  t.equal(m.made, n, 'every call made is counted');
  t.equal(m.first, 'i0');
  t.equal(m.last, `i${MAX_KEPT_CALLS - 1}`);
  t.equal(m.stop, 'tool_calls');
  t.ok(m.cpu_s < CPU_BOUND_S, `fetched and accumulated in ${m.cpu_s.toFixed(2)} CPU-s`);
});

t.test('the accumulator continues a call by its index and by its id, the Ollama and OpenAI shapes', async (t) => {
  const acc = new ChatAccumulator('m');
  const ev = (tc: unknown) => acc.event(JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [tc] } }] }));
  ev({ index: 0, id: 'a', function: { name: 'read_file', arguments: '{"pa' } });
  ev({ index: 1, id: 'b', function: { name: 'list_dir', arguments: '{' } });
  ev({ index: 0, function: { arguments: 'th":"x"}' } });
  ev({ id: 'b', function: { arguments: '}' } });
  ev({ index: 0, id: 'c', function: { name: 'finish', arguments: '{}' } });
  acc.event(JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }));
  t.equal(acc.turn().tool_calls_made, undefined, 'nothing was dropped');
  t.same(acc.turn().tool_calls, [
    { id: 'a', name: 'read_file', arguments: '{"path":"x"}' },
    { id: 'b', name: 'list_dir', arguments: '{}' },
    { id: 'c', name: 'finish', arguments: '{}' },
  ]);
});

t.test('a provider keeps one call more than the largest cap the limits schema allows', async (t) => {
  const { readFileSync } = await import('node:fs');
  const schema = JSON.parse(readFileSync(join(ROOT, 'schemas', 'limits.schema.json'), 'utf8'));
  t.equal(MAX_KEPT_CALLS, schema.properties.agent.properties.tool_calls_per_answer.maximum + 1);
});

t.test('an Anthropic answer with more tool_use blocks than a provider keeps is bounded the same way', async (t) => {
  const acc = new MessagesAccumulator('m');
  const n = MAX_KEPT_CALLS + 500;
  for (let i = 0; i < n; i++) {
    acc.event('content_block_start', JSON.stringify({ type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: `t${i}`, name: 'read_file', input: {} } }));
    acc.event('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: `{"path":"f${i}"}` } }));
  }
  acc.event('message_delta', JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'tool_use' } }));
  acc.event('message_stop', JSON.stringify({ type: 'message_stop' }));
  const turn = acc.turn();
  t.equal(turn.tool_calls.length, MAX_KEPT_CALLS, 'only the calls the loop can use are kept');
  t.equal(turn.tool_calls_made, n, 'every block made is counted');
  t.same(turn.tool_calls.at(-1), { id: `t${MAX_KEPT_CALLS - 1}`, name: 'read_file', arguments: `{"path":"f${MAX_KEPT_CALLS - 1}"}` });
  t.equal(turn.stop, 'tool_calls');
});
