/*
 * Which telemetry settings apply (the standard OTEL_* variables, or the profile), and the
 * telemetry commands: set, show and off are decisions of the CLI user, audited; header
 * values are secret references, never stored, printed or audited in clear; a remote
 * endpoint is an explicit choice that status shows.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { resolveTelemetry } from '../../src/ops/telemetry.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { isValid } from '../../src/schema/validate.js';
import { openDb } from '../../src/store/db.js';
import { cli, sandbox } from '../fixtures/env.js';

const L = shippedPolicy().limits.telemetry;
const none = () => undefined;
const on = (r: ReturnType<typeof resolveTelemetry>) => {
  if (r.state !== 'on') throw new Error(`expected on, got ${r.state}: ${r.why}`);
  return r.config;
};

t.test('the OTEL_* variables: one base endpoint for every signal, per-signal endpoints as given, protocol, headers, batch limits capped by policy', async (t) => {
  const c = on(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'x-team=core%20a,authorization=Bearer%20abc', OTEL_SERVICE_NAME: 'laptop' }, undefined, none, L));
  t.same(Object.fromEntries(Object.entries(c.targets).map(([s, x]) => [s, x!.url])), { traces: 'http://127.0.0.1:4318/v1/traces', logs: 'http://127.0.0.1:4318/v1/logs', metrics: 'http://127.0.0.1:4318/v1/metrics' });
  t.equal(c.targets.traces!.protocol, 'http/protobuf', 'http/protobuf by default');
  t.same(c.targets.logs!.headers, { 'x-team': 'core a', authorization: 'Bearer abc' }, 'headers are percent-decoded');
  t.equal(c.serviceName, 'laptop');
  t.equal(c.source, 'env');
  t.equal(c.content, false, 'content is never exported by default');

  const per = on(resolveTelemetry({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/custom/spans', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_BSP_MAX_QUEUE_SIZE: '99999999', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10' }, undefined, none, L));
  t.same(Object.keys(per.targets), ['traces'], 'only the signal that has an endpoint');
  t.match(per.targets.traces, { url: 'http://127.0.0.1:9/custom/spans', protocol: 'http/json' });
  t.equal(per.spans.queueItems, L.queue_items, 'a queue size above the policy is capped by it');
  t.equal(per.spans.batchItems, 10);

  const partial = on(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' }, undefined, none, L));
  t.same(Object.keys(partial.targets), ['traces'], 'OTEL_<SIGNAL>_EXPORTER=none leaves a signal out');
});

t.test('off unless configured; OTEL_SDK_DISABLED and the profile\'s off win; an unusable setting exports nothing and says why', async (t) => {
  t.match(resolveTelemetry({}, undefined, none, L), { state: 'off', source: null });
  t.match(resolveTelemetry({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, undefined, none, L), { state: 'off', why: /OTEL_SDK_DISABLED/ });
  t.match(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, { off: true }, none, L), { state: 'off', why: /telemetry off/ });
  t.match(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, undefined, none, L), { state: 'invalid', why: /grpc.*http\/protobuf or http\/json/ });
  t.match(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' }, undefined, none, L), { state: 'invalid' });
  const secretish = resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=%E0%A4%A' }, undefined, none, L);
  t.match(secretish, { state: 'invalid', why: /OTEL_EXPORTER_OTLP_HEADERS/ });
  t.notMatch(secretish.why, /%E0/, 'the message names the variable, never its value');
});

t.test('the profile: used when no endpoint variable is set, headers read from the secret store', async (t) => {
  const profile = { endpoint: 'http://127.0.0.1:4318', protocol: 'http/json' as const, headers: [{ name: 'Authorization', secret: 'OTEL_AUTH' }], service_name: 'from-profile' };
  const c = on(resolveTelemetry({}, profile, (n) => (n === 'OTEL_AUTH' ? 'Bearer s3cr3t' : undefined), L));
  t.equal(c.source, 'profile');
  t.match(c.targets.metrics, { url: 'http://127.0.0.1:4318/v1/metrics', protocol: 'http/json', headers: { Authorization: 'Bearer s3cr3t' } });
  t.equal(c.serviceName, 'from-profile');
  t.match(resolveTelemetry({}, profile, none, L), { state: 'invalid', why: /secret OTEL_AUTH.*not stored/ });
  t.match(resolveTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9999' }, profile, none, L), { state: 'on', source: 'env' }, 'an endpoint variable takes precedence over the profile');
});

t.test('telemetry set/show/off: audited decisions; header values only by secret reference, never printed; remote endpoints only on purpose', async (t) => {
  const sb = sandbox('sc-otel-cli');
  const value = 'Bearer otel-header-canary-91b2';
  t.equal((await cli(sb, ['secret', 'set', 'OTEL_AUTH'], value)).code, 0);

  const clear = await cli(sb, ['telemetry', 'set', '--endpoint', 'http://127.0.0.1:4318', '--header', `Authorization=${value}`]);
  t.match(clear, { code: 2, stderr: /secret:SECRET.*refused \[SC_TELEMETRY_INVALID\]/ }, 'a header value on the command line is refused');
  const missing = await cli(sb, ['telemetry', 'set', '--endpoint', 'http://127.0.0.1:4318', '--header', 'Authorization=secret:NOPE']);
  t.match(missing.stderr, /SC_SECRET_NOT_FOUND/);
  const remote = await cli(sb, ['telemetry', 'set', '--endpoint', 'https://otel.example.com']);
  t.match(remote, { code: 2, stderr: /not this machine.*--remote.*\[SC_TELEMETRY_REMOTE_UNCONFIRMED\]/ }, 'a remote endpoint needs --remote');
  const insecure = await cli(sb, ['telemetry', 'set', '--endpoint', 'http://otel.example.com:4318', '--remote', '--header', 'Authorization=secret:OTEL_AUTH']);
  t.match(insecure, { code: 2, stderr: /SC_TELEMETRY_INSECURE/ }, 'a credential header never goes over plain http to another host');
  const userinfo = await cli(sb, ['telemetry', 'set', '--endpoint', 'http://user:pw@127.0.0.1:4318']);
  t.match(userinfo.stderr, /credentials in the URL.*\[SC_TELEMETRY_INVALID\]/);
  t.notOk(existsSync(join(sb.profile, 'settings.json')), 'nothing was written by a refused set');

  const set = await cli(sb, ['--json', 'telemetry', 'set', '--endpoint', 'https://otel.example.com', '--remote', '--header', 'Authorization=secret:OTEL_AUTH', '--protocol', 'http/json']);
  t.equal(set.code, 0, set.stderr);
  const view = JSON.parse(set.stdout);
  t.ok(isValid('telemetry-view', view), 'the output matches schemas/telemetry-view.schema.json');
  t.match(view, { state: 'on', source: 'profile', remote: true, targets: [{ signal: 'traces', url: 'https://otel.example.com/v1/traces', protocol: 'http/json', loopback: false, header_names: ['Authorization'] }] });
  const stored = JSON.parse(readFileSync(join(sb.profile, 'settings.json'), 'utf8')).telemetry;
  t.same(stored, { endpoint: 'https://otel.example.com/', protocol: 'http/json', headers: [{ name: 'Authorization', secret: 'OTEL_AUTH' }], remote: true });

  const shown = await cli(sb, ['telemetry', 'show']);
  t.match(shown.stdout, /REMOTE: leaves this machine/);
  t.match(shown.stdout, /header\s+Authorization from secret OTEL_AUTH/);
  const status = await cli(sb, ['status']);
  t.match(status.stdout, /^telemetry on \(profile\): traces https:\/\/otel\.example\.com\/v1\/traces \(remote\).*REMOTE/m, 'status shows the remote export');

  const off = await cli(sb, ['--json', 'telemetry', 'off']);
  t.match(JSON.parse(off.stdout), { state: 'off', profile: { off: true } });
  const withEnv = await cli({ ...sb, env: { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' } }, ['--json', 'telemetry', 'show']);
  t.match(JSON.parse(withEnv.stdout), { state: 'off' }, 'off beats the environment');

  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const rows = db.prepare("SELECT body FROM audit WHERE kind = 'decision'").all() as Array<{ body: string }>;
  const actions = rows.map((r) => JSON.parse(r.body).action);
  t.ok(actions.includes('cli:telemetry.set') && actions.includes('cli:telemetry.off'), 'set and off are decisions in the audit log');
  const setRow = rows.map((r) => JSON.parse(r.body)).find((b) => b.action === 'cli:telemetry.set');
  t.match(setRow, { resource: { kind: 'telemetry', endpoint_kind: 'remote', host: 'otel.example.com' }, args: { header_names: ['Authorization'], header_refs: ['OTEL_AUTH'] } });
  for (const text of [set.stdout, shown.stdout, status.stdout, off.stdout, JSON.stringify(rows), readFileSync(join(sb.profile, 'settings.json'), 'utf8')]) t.notOk(text.includes('otel-header-canary'), 'the header value appears nowhere');
});
