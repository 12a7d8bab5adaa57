// createProvider: endpoint checks, where the key comes from, and when it may be sent.
import t from 'tap';
import { createProvider } from '../../../src/agent/providers/index.js';
import { enforce } from '../../../src/policy/gate.js';
import { startFakeModel } from '../../fixtures/fake-model.js';
import { modelTicket, profile, provider } from '../../fixtures/providers.js';

t.test('ollama defaults to the loopback endpoint and the configured context size', async (t) => {
  const p = provider(t, { id: 'o', provider: 'ollama', model: 'qwen', context_tokens: 65536 });
  t.same(p.endpoint, { url: 'http://127.0.0.1:11434/v1', loopback: true });
  t.equal(p.kind, 'ollama');
  t.equal(p.contextTokens, 65536);
});

t.test('a model without context_tokens gets the default from policy/limits.json', async (t) => {
  const { base } = profile(t);
  const p = provider(t, { id: 'a', provider: 'anthropic', model: 'claude', api_key_env: 'K' }, { env: { K: 'sk-ant-123456789' } });
  t.equal(p.contextTokens, base.limits.models.default_context_tokens);
  t.same(p.endpoint, { url: 'https://api.anthropic.com/', loopback: false });
});

t.test('localhost, 127.x and [::1] are loopback; any other host is remote', async (t) => {
  for (const [url, loopback] of [['http://localhost:8080/v1', true], ['http://127.0.0.2:1/v1', true], ['http://[::1]:1/v1', true], ['https://models.example.com/v1', false], ['http://10.0.0.1/v1', false], ['http://localhost.example.com/v1', false]] as const) {
    t.equal(provider(t, { id: 'x', provider: 'openai-compatible', model: 'm', base_url: url }).endpoint.loopback, loopback, url);
  }
});

t.test('refuses a base URL with credentials, a query, a fragment or another scheme, without echoing it', async (t) => {
  for (const url of ['https://user:pw-canary@api.example.com/v1', 'https://api.example.com/v1?key=q-canary', 'https://api.example.com/v1#canary', 'ftp://canary.example.com/v1', 'file:///etc/canary', 'not a url canary']) {
    t.throws(() => provider(t, { id: 'x', provider: 'openai-compatible', model: 'm', base_url: url }), { code: 'SC_MODEL_URL_INVALID', message: /^(?!.*canary)/ }, url);
  }
});

t.test('refuses to send a key over plain http to a host that is not loopback', async (t) => {
  t.throws(() => provider(t, { id: 'x', provider: 'openai-compatible', model: 'm', base_url: 'http://models.example.com/v1', api_key_env: 'K' }, { env: { K: 'sk-123456789' } }), { code: 'SC_MODEL_KEY_INSECURE' });
  t.ok(provider(t, { id: 'x', provider: 'openai-compatible', model: 'm', base_url: 'http://models.example.com/v1' }), 'without a key plain http is allowed');
  t.ok(provider(t, { id: 'x', provider: 'openai-compatible', model: 'm', base_url: 'http://localhost:1/v1', api_key_env: 'K' }, { env: { K: 'sk-123456789' } }), 'loopback http may carry a key');
});

t.test('a named key that is not set fails with SC_MODEL_CREDENTIAL_MISSING naming only the variable', async (t) => {
  t.throws(() => provider(t, { id: 'x', provider: 'anthropic', model: 'm', api_key_env: 'NOPE_KEY' }), { code: 'SC_MODEL_CREDENTIAL_MISSING', message: /NOPE_KEY is not set/ });
  t.throws(() => provider(t, { id: 'x', provider: 'anthropic', model: 'm', api_key_secret: 'NOPE_SECRET' }), { code: 'SC_MODEL_CREDENTIAL_MISSING', message: /NOPE_SECRET is not stored/ });
});

t.test('a key from the secret store is sent, and the provider error text never shows it', async (t) => {
  const { db, secrets, base } = profile(t);
  const key = 'sk-stored-canary-5544332211';
  await enforce({ policy: base, db: () => db }, { action: 'cli:secret.set', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (ticket) => secrets.set(ticket, 'MODEL_KEY', key));
  const fake = await startFakeModel({ format: 'openai', script: [{ text: 'ok' }, { status: 401, message: `bad key ${key}` }] });
  t.teardown(() => fake.close());
  const p = createProvider({ id: 's', provider: 'openai-compatible', model: 'm', base_url: `${fake.url}/v1`, api_key_secret: 'MODEL_KEY' }, { env: { MODEL_KEY: 'not-this-one' }, secrets, policy: base });
  const ticket = await modelTicket(t);
  const req = { system: '', messages: [{ role: 'user' as const, content: 'hi' }], tools: [], max_output_tokens: 16, signal: new AbortController().signal };
  t.equal((await p.turn(ticket, req)).text, 'ok');
  t.equal(fake.requests[0]!.headers.authorization, `Bearer ${key}`);
  t.notOk('tools' in fake.requests[0]!.body, 'no tools field when no tools are offered');
  const err = await p.turn(ticket, req).catch((e) => e);
  t.equal(err.code, 'SC_MODEL_FAILED');
  t.notMatch(err.message, /canary/);
});

t.test('no key means no credential header at all', async (t) => {
  const fake = await startFakeModel({ format: 'anthropic', script: [{ text: 'ok' }] });
  t.teardown(() => fake.close());
  const p = provider(t, { id: 'a', provider: 'anthropic', model: 'm', base_url: fake.url });
  await p.turn(await modelTicket(t), { system: '', messages: [{ role: 'user', content: 'hi' }], tools: [], max_output_tokens: 16, signal: new AbortController().signal });
  t.notOk('x-api-key' in fake.requests[0]!.headers);
  t.notOk('authorization' in fake.requests[0]!.headers);
});

t.test('modelResource names the model, its endpoint kind and host for the gate', async (t) => {
  const { modelResource } = await import('../../../src/agent/providers/index.js');
  t.same(modelResource(provider(t, { id: 'o', provider: 'ollama', model: 'q' })), { model: 'o', endpoint_kind: 'loopback', host: '127.0.0.1' });
  t.same(modelResource(provider(t, { id: 'v6', provider: 'ollama', model: 'q', base_url: 'http://[::1]:8080/v1' })), { model: 'v6', endpoint_kind: 'loopback', host: '::1' });
  t.same(modelResource(provider(t, { id: 'a', provider: 'anthropic', model: 'c' })), { model: 'a', endpoint_kind: 'remote', host: 'api.anthropic.com' });
});
