// shadowcode model add/list/remove/probe: settings.json edits, refusals, and the probe against a fake model.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startFakeModel } from '../fixtures/fake-model.js';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';

const settingsOf = (profile: string) => JSON.parse(readFileSync(join(profile, 'settings.json'), 'utf8'));

t.test('model add writes a validated settings.json, mode 0600, first model becomes the default', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['model', 'add', 'local', '--provider', 'ollama', '--model', 'qwen2.5-coder:14b']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /added model local \(ollama, qwen2\.5-coder:14b\) at http:\/\/127\.0\.0\.1:11434\/v1 \[loopback\], the default/);
  t.same(settingsOf(sb.profile), { models: [{ id: 'local', provider: 'ollama', model: 'qwen2.5-coder:14b' }], default_model: 'local' });
  t.equal(statSync(join(sb.profile, 'settings.json')).mode & 0o777, 0o600);
  const r2 = await cli(sb, ['--json', 'model', 'add', 'claude', '--provider', 'anthropic', '--model', 'claude-sonnet-4-5', '--api-key-env', 'ANTHROPIC_API_KEY', '--context-tokens', '200000']);
  t.equal(r2.code, 0, r2.stderr);
  t.match(JSON.parse(r2.stdout), { endpoint: 'remote', default: false, credential: 'missing' });
  t.same(settingsOf(sb.profile).models[1], { id: 'claude', provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_env: 'ANTHROPIC_API_KEY', context_tokens: 200000 });
  t.equal(settingsOf(sb.profile).default_model, 'local', '--default was not given');
  t.same(readdirSync(sb.profile).filter((f) => f.includes('.tmp')), [], 'no temp file is left');
});

t.test('model add --default moves the default; model remove drops the model and a default pointing at it', async (t) => {
  const sb = sandbox();
  await cli(sb, ['model', 'add', 'a', '--provider', 'ollama', '--model', 'm']);
  await cli(sb, ['model', 'add', 'b', '--provider', 'ollama', '--model', 'm', '--default']);
  t.equal(settingsOf(sb.profile).default_model, 'b');
  const r = await cli(sb, ['model', 'remove', 'b']);
  t.equal(r.stdout, 'removed model b (it was the default; none is set now)\n');
  t.same(settingsOf(sb.profile), { models: [{ id: 'a', provider: 'ollama', model: 'm' }] });
  const r2 = await cli(sb, ['--json', 'model', 'remove', 'nope']);
  t.equal(r2.code, 1);
  t.equal(JSON.parse(r2.stdout || r2.stderr).error.code, 'SC_MODEL_NOT_FOUND');
});

t.test('model add refuses a duplicate id, both key options, a bad context size, and a missing provider, writing nothing', async (t) => {
  const sb = sandbox();
  await cli(sb, ['model', 'add', 'a', '--provider', 'ollama', '--model', 'm']);
  const before = readFileSync(join(sb.profile, 'settings.json'), 'utf8');
  const cases: Array<[string[], string]> = [
    [['model', 'add', 'a', '--provider', 'ollama', '--model', 'm'], 'SC_MODEL_EXISTS'],
    [['model', 'add', 'b', '--provider', 'anthropic', '--model', 'm', '--api-key-env', 'A', '--api-key-secret', 'B'], 'SC_USAGE'],
    [['model', 'add', 'b', '--provider', 'ollama', '--model', 'm', '--context-tokens', 'lots'], 'SC_BAD_VALUE'],
    [['model', 'add', 'b', '--provider', 'ollama', '--model', 'm', '--context-tokens', '12'], 'SC_BAD_VALUE'],
    [['model', 'add', 'b', '--model', 'm'], 'SC_USAGE'],
    [['model', 'add', 'b', '--provider', 'gpt', '--model', 'm'], 'SC_BAD_VALUE'],
    [['model', 'add', 'bad id!', '--provider', 'ollama', '--model', 'm'], 'SC_BAD_VALUE'],
  ];
  for (const [argv, code] of cases) {
    const r = await cli(sb, ['--json', ...argv]);
    t.not(r.code, 0, argv.join(' '));
    t.equal(JSON.parse(r.stdout || r.stderr).error.code, code, argv.join(' '));
  }
  t.equal(readFileSync(join(sb.profile, 'settings.json'), 'utf8'), before, 'settings.json is unchanged');
});

t.test('a key is never accepted on the command line', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--json', 'model', 'add', 'x', '--provider', 'openai-compatible', '--model', 'm', '--api-key', 'sk-canary-on-argv']);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_UNKNOWN_OPTION');
  t.notMatch(r.stdout + r.stderr, /canary/);
});

t.test('model add refuses URLs with credentials, a query, a fragment or another scheme, and keys over plain http to remote hosts', async (t) => {
  const sb = sandbox();
  for (const url of ['https://user:pw-canary@api.example.com/v1', 'https://api.example.com/v1?api_key=canary', 'https://api.example.com/v1#canary', 'ftp://api.example.com/v1', 'javascript:canary', 'file:///tmp/canary']) {
    const r = await cli(sb, ['--json', 'model', 'add', 'x', '--provider', 'openai-compatible', '--model', 'm', '--base-url', url]);
    t.equal(r.code, 2, url);
    t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_MODEL_URL_INVALID', url);
    t.notMatch(r.stdout + r.stderr, /canary/, `${url} is not echoed`);
  }
  const r = await cli(sb, ['--json', 'model', 'add', 'x', '--provider', 'openai-compatible', '--model', 'm', '--base-url', 'http://models.example.com/v1', '--api-key-env', 'K']);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_MODEL_KEY_INSECURE');
  t.equal(r.code, 2, 'a key over plain http is a bad value, like the URL errors above');
  const ok = await cli(sb, ['--json', 'model', 'add', 'x', '--provider', 'openai-compatible', '--model', 'm', '--base-url', 'http://localhost:8080/v1', '--api-key-env', 'K']);
  t.equal(ok.code, 0, 'a key over http to localhost is fine');
  t.throws(() => statSync(join(sb.profile, 'nothing')));
});

t.test('model list shows endpoint kind and key names with presence, never values', async (t) => {
  const sb = sandbox();
  await cli(sb, ['secret', 'set', 'MY_KEY'], 'sk-canary-secret-value-1');
  await cli(sb, ['model', 'add', 'l', '--provider', 'ollama', '--model', 'qwen']);
  await cli(sb, ['model', 'add', 'r', '--provider', 'openai-compatible', '--model', 'gpt', '--api-key-secret', 'MY_KEY']);
  await cli(sb, ['model', 'add', 'e', '--provider', 'anthropic', '--model', 'c', '--api-key-env', 'UNSET_KEY']);
  const r = await cli(sb, ['--json', 'model', 'list']);
  const d = JSON.parse(r.stdout);
  t.same(d.models.map((m: { id: string }) => m.id), ['l', 'r', 'e'], 'the three models, no other');
  t.match(d.models, [
    { id: 'l', endpoint: 'loopback', credential: 'not_needed', default: true, base_url: 'http://127.0.0.1:11434/v1' },
    { id: 'r', endpoint: 'remote', api_key_secret: 'MY_KEY', credential: 'present' },
    { id: 'e', endpoint: 'remote', api_key_env: 'UNSET_KEY', credential: 'missing' },
  ]);
  const text = await cli(sb, ['model', 'list']);
  t.match(text.stdout, /\* l {2,}ollama {2,}qwen {2,}http:\/\/127\.0\.0\.1:11434\/v1 \[loopback\] {2,}no key/);
  t.match(text.stdout, /UNSET_KEY \(missing\)/);
  t.notMatch(r.stdout + text.stdout, /canary/);
});

t.test('model probe, run as the built CLI, reports an answering endpoint and sends the key only as a header', async (t) => {
  const sb = sandbox();
  const fake = await startFakeModel({ format: 'openai', script: [] });
  t.teardown(() => fake.close());
  await cli(sb, ['model', 'add', 'f', '--provider', 'openai-compatible', '--model', 'fake-1', '--base-url', `${fake.url}/v1`, '--api-key-env', 'FAKE_KEY']);
  // The fake answers a GET past its (empty) script with 500: the probe reports the failure, exit 1.
  const r = await spawnCli(sb, ['--json', 'model', 'probe', 'f'], '', { FAKE_KEY: 'sk-probe-canary-123' });
  t.equal(r.code, 1, r.stderr);
  t.match(JSON.parse(r.stdout), { id: 'f', ok: false, http_status: 500, endpoint: 'loopback', url: `${fake.url}/v1/models` });
  t.equal(fake.requests.length, 1);
  t.equal(fake.requests[0]!.method, 'GET');
  t.equal(fake.requests[0]!.headers.authorization, 'Bearer sk-probe-canary-123');
  t.notMatch(r.stdout + r.stderr, /canary/);
});

t.test('model probe of a missing key or an unknown model is a clear error, and nothing is contacted', async (t) => {
  const sb = sandbox();
  const fake = await startFakeModel({ format: 'openai', script: [] });
  t.teardown(() => fake.close());
  await cli(sb, ['model', 'add', 'f', '--provider', 'openai-compatible', '--model', 'm', '--base-url', `${fake.url}/v1`, '--api-key-env', 'NOT_SET_KEY']);
  const r = await cli(sb, ['--json', 'model', 'probe', 'f']);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_MODEL_CREDENTIAL_MISSING');
  const r2 = await cli(sb, ['--json', 'model', 'probe', 'nope']);
  t.equal(JSON.parse(r2.stdout || r2.stderr).error.code, 'SC_MODEL_NOT_FOUND');
  t.equal(fake.requests.length, 0);
});

t.test('model commands refuse a settings.json that breaks its schema, and leave it alone', async (t) => {
  const sb = sandbox();
  await cli(sb, ['status']);
  writeFileSync(join(sb.profile, 'settings.json'), '{"models":[{"id":"x","provider":"mystery","model":"m"}]}');
  const r = await cli(sb, ['--json', 'model', 'add', 'y', '--provider', 'ollama', '--model', 'm']);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_SETTINGS_INVALID');
  t.equal(readFileSync(join(sb.profile, 'settings.json'), 'utf8'), '{"models":[{"id":"x","provider":"mystery","model":"m"}]}');
});

t.test('model probe reports ok, and whether the endpoint lists the model, for both wire formats', async (t) => {
  const sb = sandbox();
  const openai = await startFakeModel({ format: 'openai', script: [], models: ['fake-1'] });
  const anthropic = await startFakeModel({ format: 'anthropic', script: [], models: ['claude-x'] });
  t.teardown(() => Promise.all([openai.close(), anthropic.close()]));
  await cli(sb, ['model', 'add', 'o', '--provider', 'openai-compatible', '--model', 'fake-1', '--base-url', `${openai.url}/v1`]);
  await cli(sb, ['model', 'add', 'a', '--provider', 'anthropic', '--model', 'not-listed', '--base-url', anthropic.url, '--api-key-env', 'ANT_KEY']);
  const o = await cli(sb, ['model', 'probe', 'o']);
  t.equal(o.code, 0, o.stderr);
  t.equal(o.stdout, `model o: ok (HTTP 200) at ${openai.url}/v1/models [loopback]\n`);
  t.notOk('authorization' in openai.requests[0]!.headers, 'no key configured, none sent');
  sb.env.ANT_KEY = 'sk-ant-probe-123456';
  const a = await cli(sb, ['--json', 'model', 'probe', 'a']);
  t.equal(a.code, 0, a.stderr);
  t.match(JSON.parse(a.stdout), { ok: true, http_status: 200, model_listed: false, detail: /not-listed is not in the endpoint's list/ });
  t.equal(anthropic.requests[0]!.path, '/v1/models');
  t.equal(anthropic.requests[0]!.headers['x-api-key'], 'sk-ant-probe-123456');
  t.equal(anthropic.requests[0]!.headers['anthropic-version'], '2023-06-01');
});

t.test('model probe refuses to follow a redirect and reports a refused endpoint', async (t) => {
  const sb = sandbox();
  const { createServer } = await import('node:http');
  let hits = 0;
  const target = createServer((_q, r) => (hits++, r.end('{}')));
  const srv = createServer((q, r) => {
    if (q.url?.startsWith('/r/')) {
      r.writeHead(302, { location: `http://127.0.0.1:${(target.address() as { port: number }).port}/v1/models` });
      r.end();
    } else {
      r.writeHead(401, { 'content-type': 'application/json' });
      r.end('{"error":{"message":"bad key"}}');
    }
  });
  await Promise.all([new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok)), new Promise<void>((ok) => target.listen(0, '127.0.0.1', ok))]);
  t.teardown(() => Promise.all([new Promise((ok) => srv.close(ok)), new Promise((ok) => target.close(ok))]));
  const port = (srv.address() as { port: number }).port;
  await cli(sb, ['model', 'add', 'r', '--provider', 'openai-compatible', '--model', 'm', '--base-url', `http://127.0.0.1:${port}/r/v1`]);
  await cli(sb, ['model', 'add', 'k', '--provider', 'openai-compatible', '--model', 'm', '--base-url', `http://localhost:${port}/v1`]);
  const r = await cli(sb, ['--json', 'model', 'probe', 'r']);
  t.equal(r.code, 1);
  t.match(JSON.parse(r.stdout), { ok: false, http_status: 302, detail: /redirect refused/ });
  t.equal(hits, 0, 'the redirect target was never asked');
  const k = await cli(sb, ['--json', 'model', 'probe', 'k']);
  t.match(JSON.parse(k.stdout), { ok: false, http_status: 401, endpoint: 'loopback', detail: /refuses the key/ });
});

t.test('probing or removing a model id that does not exist names the nearest one', async (t) => {
  const sb = sandbox();
  await cli(sb, ['model', 'add', 'local', '--provider', 'ollama', '--model', 'm']);
  for (const verb of ['probe', 'remove']) {
    const r = await cli(sb, ['--json', 'model', verb, 'locl']);
    t.match(JSON.parse(r.stdout).error, { code: 'SC_MODEL_NOT_FOUND', message: /^no model named locl; did you mean local\?$/ }, verb);
  }
  const far = await cli(sb, ['--json', 'model', 'probe', 'xyzzy']);
  t.match(JSON.parse(far.stdout).error.message, /see shadowcode model list/);
});
