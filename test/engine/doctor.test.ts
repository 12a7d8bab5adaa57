import { chmodSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { cli, connection, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';

function check(data: any, id: string) {
  return data.checks.find((c: any) => c.id === id);
}

t.test('a healthy profile: every check is ok except trust, which says how to fix it', async (t) => {
  const sb = sandbox();
  const { call, close } = await connection(sb);
  t.teardown(close);
  const d = (await call('shadow_doctor')).data;
  t.equal(d.status, 'warn');
  t.match(check(d, 'trust'), { status: 'warn', detail: /run shadowcode trust/ });
  for (const id of ['profile_permissions', 'database_integrity', 'audit_chain', 'policy', 'settings', 'secrets']) t.equal(check(d, id).status, 'ok', id);
  t.equal(d.model_probes, null, 'no probe unless asked');
});

t.test('doctor finds loose permissions, a broken audit chain and missing credentials, and repairs nothing', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({ models: [{ id: 'local', provider: 'ollama', model: 'qwen', api_key_env: 'MISSING_MODEL_KEY' }, { id: 'stored', provider: 'ollama', model: 'qwen', api_key_secret: 'MISSING_STORED_KEY' }] }));
  chmodSync(join(sb.profile, 'state.db'), 0o644);
  const { call, engine, close } = await connection(sb);
  t.teardown(close);
  engine.db().exec('DROP TRIGGER audit_no_update');
  engine.db().prepare("UPDATE audit SET body = '{}' WHERE seq = 1").run();
  const d = (await call('shadow_doctor')).data;
  t.equal(d.status, 'fail');
  t.match(check(d, 'profile_permissions'), { status: 'fail', detail: /state.db is 644, expected 600/ });
  t.match(check(d, 'audit_chain'), { status: 'fail', detail: /broken at row 1/ });
  t.match(check(d, 'secrets'), { status: 'warn', detail: 'missing: MISSING_MODEL_KEY, MISSING_STORED_KEY' });
  const again = (await call('shadow_doctor')).data;
  t.equal(check(again, 'profile_permissions').status, 'fail', 'still failing: nothing was repaired');
});

t.test('the model probe asks each endpoint once, only when asked, without credentials', async (t) => {
  const seen: Array<{ url?: string; auth?: string }> = [];
  const srv = createServer((req, res) => {
    seen.push({ url: req.url, auth: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => srv.close());
  const port = (srv.address() as { port: number }).port;
  const sb = sandbox();
  const { call, close, engine } = await connection(sb);
  t.teardown(close);
  engine.db(); // creates the profile directory
  writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({ models: [
    { id: 'up', provider: 'openai-compatible', model: 'm', base_url: `http://127.0.0.1:${port}/v1`, api_key_env: 'PROBE_KEY' },
    { id: 'down', provider: 'openai-compatible', model: 'm', base_url: 'http://127.0.0.1:9/v1' },
  ] }));
  engine.env.PROBE_KEY = 'should-never-be-sent';
  const d = (await call('shadow_doctor', { probe_models: true })).data;
  t.same(fields(d.model_probes, ['id', 'status', 'detail']), [{ id: 'up', status: 'ok', detail: 'HTTP 200' }, { id: 'down', status: 'fail', detail: 'connection failed' }], 'one probe per model, no other');
  t.same(seen, [{ url: '/v1/models', auth: undefined }]);
});

t.test('the model probe skips a remote endpoint while the project has no network permission', async (t) => {
  const sb = sandbox();
  const { call, close, engine } = await connection(sb);
  t.teardown(close);
  engine.db();
  writeFileSync(join(sb.profile, 'settings.json'), JSON.stringify({ models: [
    { id: 'far', provider: 'openai-compatible', model: 'm', base_url: 'http://192.0.2.1/v1' },
    { id: 'odd', provider: 'openai-compatible', model: 'm', base_url: 'http://u:p@127.0.0.1:9/v1' },
  ] }));
  const d = (await call('shadow_doctor', { probe_models: true })).data;
  t.matchOnly(fields(d.model_probes, ['id', 'status', 'detail']), [
    { id: 'far', status: 'skipped', detail: /no network permission/ },
    { id: 'odd', status: 'skipped', detail: /base URL is refused/ },
  ]);
});

t.test('doctor warns when the project, or a folder in it, is on PATH', async (t) => {
  const sb = sandbox();
  const ok = await connection(sb);
  t.teardown(ok.close);
  t.strictSame(check((await ok.call('shadow_doctor')).data, 'path'), { id: 'path', status: 'ok', detail: 'no PATH entry is inside the project' });
  const sb2 = sandbox();
  sb2.env.PATH = `/usr/bin:${sb2.project}/node_modules/.bin:/bin`;
  const bad = await connection(sb2);
  t.teardown(bad.close);
  t.match(check((await bad.call('shadow_doctor')).data, 'path'), { status: 'warn', detail: `PATH runs programs from inside ${sb2.project}: ${sb2.project}/node_modules/.bin. A command` });
});
