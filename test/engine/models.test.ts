import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, connection, sandbox } from '../fixtures/env.js';

t.test('models are listed without credentials, with URLs stripped of userinfo and query', async (t) => {
  const sb = sandbox();
  await cli(sb, ['secret', 'set', 'STORED_KEY'], 'sk-canary-in-store-123');
  writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({
    default_model: 'a',
    models: [
      { id: 'a', provider: 'openai-compatible', model: 'gpt', base_url: 'https://user:pw-canary@api.example/v1?key=q-canary', api_key_env: 'STORED_KEY' },
      { id: 'b', provider: 'ollama', model: 'qwen' },
      { id: 'c', provider: 'anthropic', model: 'claude', api_key_env: 'NOT_SET_ANYWHERE' },
    ],
  }));
  const { call, close } = await connection(sb);
  t.teardown(close);
  const r = await call('shadow_models');
  t.same(r.data.models.map((m: { id: string }) => m.id), ['a', 'b', 'c'], 'the three models, no other');
  t.match(r.data.models, [
    { id: 'a', base_url: 'https://api.example/v1', endpoint: 'invalid', api_key_env: 'STORED_KEY', credential: 'present', default: true },
    { id: 'b', base_url: 'http://127.0.0.1:11434/v1', endpoint: 'loopback', credential: 'not_needed' },
    { id: 'c', base_url: 'https://api.anthropic.com/', endpoint: 'remote', credential: 'missing' },
  ]);
  t.equal(r.data.network, false, 'the project has no network permission');
  t.notMatch(r.text, /canary/);
});

t.test('a broken settings file is a clear error', async (t) => {
  const sb = sandbox();
  const { call, close, engine } = await connection(sb);
  t.teardown(close);
  engine.db();
  writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({ models: [{ id: 'x', provider: 'mystery', model: 'm' }] }));
  const r = await call('shadow_models');
  t.equal(r.data.error.code, 'SC_SETTINGS_INVALID');
  t.match(r.data.error.message, /settings.json at \/models\/0\/provider: must be one of/);
});
