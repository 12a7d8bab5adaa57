// Both providers against the fake model, for every stream quirk and failure
// the fake can play. The same script drives both wire formats.
import t, { type Test } from 'tap';
import type { SettingsModel } from '../../../src/agent/providers/index.js';
import type { Turn, TurnRequest } from '../../../src/agent/types.js';
import { startFakeModel, type FakeModel, type Step } from '../../fixtures/fake-model.js';
import { modelTicket, provider } from '../../fixtures/providers.js';

const FORMATS = [
  { format: 'openai', provider: 'openai-compatible', base: (u: string) => `${u}/v1`, path: '/v1/chat/completions' },
  { format: 'anthropic', provider: 'anthropic', base: (u: string) => u, path: '/v1/messages' },
] as const;

const TOOL = { name: 'read_file', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } };

function request(over: Partial<TurnRequest> = {}): TurnRequest {
  return { system: 'You are a test.', messages: [{ role: 'user', content: 'hello' }], tools: [TOOL], max_output_tokens: 256, signal: new AbortController().signal, ...over };
}

for (const f of FORMATS) {
  async function setup(t: Test, script: Step[], opts: { env?: NodeJS.ProcessEnv; entry?: Partial<SettingsModel>; limits?: Record<string, number> } = {}) {
    const fake: FakeModel = await startFakeModel({ format: f.format, script });
    t.teardown(() => fake.close());
    const p = provider(t, { id: 'm1', provider: f.provider, model: 'test-model', base_url: f.base(fake.url), ...opts.entry }, { env: opts.env, limits: opts.limits });
    const ticket = await modelTicket(t);
    return { fake, p, turn: (req: TurnRequest = request()): Promise<Turn> => p.turn(ticket, req) };
  }

  t.test(`${f.format}: streams text, reports usage and a normal end, and sends the request in the wire format`, async (t) => {
    const { fake, turn } = await setup(t, [{ text: 'Hello there, friend.', split: 3, usage: { input_tokens: 42, output_tokens: 5 } }], { env: { K: 'sk-local-key-123456' }, entry: { api_key_env: 'K' } });
    const deltas: string[] = [];
    const r = await turn(request({ onText: (d) => deltas.push(d) }));
    t.same(r, { text: 'Hello there, friend.', tool_calls: [], stop: 'end', usage: { input_tokens: 42, output_tokens: 5 } });
    t.ok(deltas.length > 3, 'text arrived in several deltas');
    t.equal(deltas.join(''), 'Hello there, friend.');
    t.equal(fake.requests.length, 1);
    const [req] = fake.requests;
    t.equal(req!.path, f.path);
    t.equal(req!.body.model, 'test-model');
    t.equal(req!.body.stream, true);
    t.equal(req!.body.max_tokens, 256);
    if (f.format === 'openai') {
      t.equal(req!.headers.authorization, 'Bearer sk-local-key-123456');
      t.same(req!.body.messages, [{ role: 'system', content: 'You are a test.' }, { role: 'user', content: 'hello' }]);
      t.same(req!.body.tools, [{ type: 'function', function: { name: 'read_file', description: 'Reads a file', parameters: TOOL.input_schema } }]);
      t.same(req!.body.stream_options, { include_usage: true });
    } else {
      t.equal(req!.headers['x-api-key'], 'sk-local-key-123456');
      t.equal(req!.headers['anthropic-version'], '2023-06-01');
      t.equal(req!.body.system, 'You are a test.');
      t.same(req!.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
      t.same(req!.body.tools, [TOOL]);
    }
  });

  t.test(`${f.format}: parallel tool calls with arguments split across many deltas are accumulated exactly`, async (t) => {
    const a = JSON.stringify({ path: 'src/a.ts', note: 'ünïcode ✓' });
    const b = JSON.stringify({ path: 'src/b.ts' });
    const { turn } = await setup(t, [{ text: 'Reading.', tool_calls: [{ id: 'c1', name: 'read_file', arguments: a }, { id: 'c2', name: 'read_file', arguments: b }], split: 1 }]);
    const r = await turn();
    t.equal(r.text, 'Reading.');
    t.same(r.tool_calls, [{ id: 'c1', name: 'read_file', arguments: a }, { id: 'c2', name: 'read_file', arguments: b }]);
    t.equal(r.stop, 'tool_calls');
  });

  t.test(`${f.format}: a server that says stop after tool calls still returns the calls`, async (t) => {
    const { turn } = await setup(t, [{ tool_calls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"x"}' }], finish: 'stop' }]);
    const r = await turn();
    t.equal(r.stop, 'end');
    t.same(r.tool_calls, [{ id: 'c1', name: 'read_file', arguments: '{"path":"x"}' }]);
  });

  t.test(`${f.format}: length with partial arguments is reported as length, the arguments raw`, async (t) => {
    const { turn } = await setup(t, [{ tool_calls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"src/ver' }], finish: 'length' }]);
    const r = await turn();
    t.equal(r.stop, 'length');
    t.equal(r.tool_calls[0]?.arguments, '{"path":"src/ver');
  });

  t.test(`${f.format}: malformed tool arguments are returned as the raw text, never parsed`, async (t) => {
    const { turn } = await setup(t, [{ tool_calls: [{ id: 'c1', name: 'read_file', arguments: "{path: 'x', }" }] }]);
    const r = await turn();
    t.same(r.tool_calls, [{ id: 'c1', name: 'read_file', arguments: "{path: 'x', }" }]);
  });

  t.test(`${f.format}: the conversation so far, with tool calls and results, is sent in the wire format`, async (t) => {
    const { fake, turn } = await setup(t, [{ text: 'done' }]);
    await turn(request({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'Reading.', tool_calls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a"}' }, { id: 'c2', name: 'read_file', arguments: 'not json' }] },
        { role: 'tool', tool_call_id: 'c1', name: 'read_file', content: 'A' },
        { role: 'tool', tool_call_id: 'c2', name: 'read_file', content: 'arguments are not JSON', is_error: true },
      ],
    }));
    const sent = fake.requests[0]!.body.messages;
    if (f.format === 'openai') {
      t.same(sent.slice(1), [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'Reading.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }, { id: 'c2', type: 'function', function: { name: 'read_file', arguments: 'not json' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'A' },
        { role: 'tool', tool_call_id: 'c2', content: 'arguments are not JSON' },
      ]);
    } else {
      t.same(sent, [
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Reading.' }, { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a' } }, { type: 'tool_use', id: 'c2', name: 'read_file', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'A' }, { type: 'tool_result', tool_use_id: 'c2', content: 'arguments are not JSON', is_error: true }] },
      ]);
    }
  });

  for (const status of [429, 500]) {
    t.test(`${f.format}: HTTP ${status} fails with SC_MODEL_FAILED, its status and a redacted message`, async (t) => {
      const key = 'sk-canary-key-99887766';
      const { turn } = await setup(t, [{ status, message: `quota for ${key} exceeded` }], { env: { K: key }, entry: { api_key_env: 'K' } });
      const err = await turn().catch((e) => e);
      t.equal(err.code, 'SC_MODEL_FAILED');
      t.equal(err.detail.status, status);
      t.match(err.message, new RegExp(`HTTP ${status}: quota for \\[secret:K\\] exceeded`));
      t.notMatch(err.message, /canary/);
      if (status === 429) t.equal(err.detail.retry_after_s, 1);
    });
  }

  t.test(`${f.format}: a stream that stalls mid-answer hits the idle deadline`, async (t) => {
    const { turn } = await setup(t, [{ text: 'partial', stall: true }], { limits: { idle_ms: 300 } });
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_TIMEOUT');
    t.match(err.message, /the stream went silent within 300 ms/);
  });

  t.test(`${f.format}: a server that never answers hits the first-byte deadline`, async (t) => {
    const { turn } = await setup(t, [{ stall: 'headers' }], { limits: { first_byte_ms: 300 } });
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_TIMEOUT');
    t.match(err.message, /no answer within 300 ms/);
  });

  t.test(`${f.format}: a trickling stream still ends at the total deadline`, async (t) => {
    const { turn } = await setup(t, [{ text: 'partial', stall: true }], { limits: { idle_ms: 60000, total_ms: 1000 } });
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_TIMEOUT');
    t.match(err.message, /no complete answer within 1000 ms/);
  });

  t.test(`${f.format}: an oversized stream is cut at the response cap`, async (t) => {
    const { turn } = await setup(t, [{ oversize: true }], { limits: { response_bytes: 262144 } });
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_MODEL_RESPONSE_TOO_LARGE');
    t.equal(err.detail.limit_bytes, 262144);
  });

  t.test(`${f.format}: a malformed stream event fails the turn`, async (t) => {
    const { turn } = await setup(t, [{ text: 'hi', garbage: true }]);
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_MODEL_FAILED');
    t.match(err.message, /malformed stream event/);
  });

  t.test(`${f.format}: a redirect is refused, never followed`, async (t) => {
    const other = await startFakeModel({ format: f.format, script: [{ text: 'elsewhere' }] });
    t.teardown(() => other.close());
    const { turn } = await setup(t, [{ redirect: `${other.url}${f.path}` }]);
    const err = await turn().catch((e) => e);
    t.equal(err.code, 'SC_MODEL_FAILED');
    t.equal(err.detail.status, 302);
    t.match(err.message, /redirect refused/);
    t.equal(other.requests.length, 0, 'the redirect target was never asked');
  });

  t.test(`${f.format}: a cancelled task aborts the request in flight`, async (t) => {
    const { turn } = await setup(t, [{ text: 'partial', stall: true }]);
    const ac = new AbortController();
    const p = turn(request({ signal: ac.signal, onText: () => ac.abort(new Error('cancelled by test')) }));
    const err = await p.catch((e) => e);
    t.match(err.message, /cancelled by test/);
  });

  t.test(`${f.format}: a stream cut before its end fails the turn`, async (t) => {
    const { fake, turn } = await setup(t, [{ text: 'partial', stall: true }], { limits: { idle_ms: 60000 } });
    const err = await turn(request({ onText: () => void fake.close() })).catch((e) => e);
    t.equal(err.code, 'SC_MODEL_FAILED');
    t.match(err.message, /closed mid-answer|ended before/);
  });
}

t.test('openai: Ollama-style calls that all carry index 0 are told apart by their ids', async (t) => {
  const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: [{ id: 'a', name: 'read_file', arguments: '{"path":"1"}', index: 0 }, { id: 'b', name: 'list_dir', arguments: '{"path":"."}', index: 0 }], split: 4 }] });
  t.teardown(() => fake.close());
  const p = provider(t, { id: 'o', provider: 'ollama', model: 'qwen', base_url: `${fake.url}/v1` });
  const r = await p.turn(await modelTicket(t), request());
  t.same(r.tool_calls, [{ id: 'a', name: 'read_file', arguments: '{"path":"1"}' }, { id: 'b', name: 'list_dir', arguments: '{"path":"."}' }]);
});

t.test('openai: calls without an index are accumulated by id, continuation deltas by position', async (t) => {
  const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: [{ id: 'a', name: 'read_file', arguments: '{"path":"one"}', index: null }, { id: 'b', name: 'read_file', arguments: '{"path":"two"}', index: null }], split: 3 }] });
  t.teardown(() => fake.close());
  const p = provider(t, { id: 'o', provider: 'openai-compatible', model: 'x', base_url: `${fake.url}/v1` });
  const r = await p.turn(await modelTicket(t), request());
  t.same(r.tool_calls, [{ id: 'a', name: 'read_file', arguments: '{"path":"one"}' }, { id: 'b', name: 'read_file', arguments: '{"path":"two"}' }]);
});

t.test('openai: a call without any id gets a stable generated one', async (t) => {
  const fake = await startFakeModel({ format: 'openai', script: [{ tool_calls: [{ id: '', name: 'read_file', arguments: '{}' }] }] });
  t.teardown(() => fake.close());
  const p = provider(t, { id: 'o', provider: 'openai-compatible', model: 'x', base_url: `${fake.url}/v1` });
  const r = await p.turn(await modelTicket(t), request());
  t.same(r.tool_calls, [{ id: 'call_0', name: 'read_file', arguments: '{}' }]);
});

t.test('a turn needs a gate ticket for model:request', async (t) => {
  const p = provider(t, { id: 'o', provider: 'ollama', model: 'qwen' });
  await t.rejects(p.turn({ decisionId: 'x', action: 'model:request', ceiling: 'read_only', owner: 'o' }, request()), { code: 'SC_TICKET_REFUSED' });
});

t.test('a refused connection fails with SC_MODEL_FAILED and no status', async (t) => {
  const fake = await startFakeModel({ format: 'openai', script: [] });
  const url = fake.url;
  await fake.close();
  const p = provider(t, { id: 'o', provider: 'openai-compatible', model: 'x', base_url: `${url}/v1` });
  const err = await p.turn(await modelTicket(t), request()).catch((e) => e);
  t.equal(err.code, 'SC_MODEL_FAILED');
  t.equal(err.detail.status, null);
  t.match(err.message, /connection failed \(ECONNREFUSED\)/);
});

for (const f of FORMATS) {
  t.test(`${f.format}: an error event inside a 200 stream fails the turn with its redacted message`, async (t) => {
    const fake = await startFakeModel({ format: f.format, script: [{ text: 'partial', stream_error: 'Overloaded, try later' }] });
    t.teardown(() => fake.close());
    const p = provider(t, { id: 'm1', provider: f.provider, model: 'x', base_url: f.base(fake.url) });
    const err = await p.turn(await modelTicket(t), request()).catch((e) => e);
    t.equal(err.code, 'SC_MODEL_FAILED');
    t.equal(err.detail.status, 200);
    t.match(err.message, /the stream reported an error: Overloaded, try later/);
  });

  t.test(`${f.format}: a 200 answer that is not an event stream is refused`, async (t) => {
    const fake = await startFakeModel({ format: f.format, script: [{ text: 'hi', content_type: 'application/json' }] });
    t.teardown(() => fake.close());
    const p = provider(t, { id: 'm1', provider: f.provider, model: 'x', base_url: f.base(fake.url) });
    const err = await p.turn(await modelTicket(t), request()).catch((e) => e);
    t.equal(err.code, 'SC_MODEL_FAILED');
    t.match(err.message, /not an event stream \(content-type application\/json\)/);
  });
}

t.test('an endpoint that accepts the connection but never completes TLS hits the connect deadline', async (t) => {
  const { createServer } = await import('node:net');
  const held: import('node:net').Socket[] = [];
  const srv = createServer((s) => void held.push(s)); // accepts TCP, never speaks TLS
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  t.teardown(() => {
    for (const s of held) s.destroy();
    srv.close();
  });
  const port = (srv.address() as { port: number }).port;
  const p = provider(t, { id: 'tls', provider: 'openai-compatible', model: 'x', base_url: `https://127.0.0.1:${port}/v1` }, { limits: { connect_ms: 300 } });
  const err = await p.turn(await modelTicket(t), request()).catch((e) => e);
  t.equal(err.code, 'SC_TIMEOUT');
  t.match(err.message, /no connection within 300 ms/);
  t.equal(err.detail.deadline_ms, 300);
});
