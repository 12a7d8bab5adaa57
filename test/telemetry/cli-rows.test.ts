/*
 * A short CLI command (trust, approvals approve, …) exports the audit rows it committed, as
 * log records, before it exits: the export starts after the command ran, logs only, and stops
 * within limits.telemetry.shutdown_ms.
 *
 *   shadowcode trust (OTEL_* set, the log batch due only after a minute) ─► exit
 *   receiver: the trust decision's row, as it is in state.db, from a process of role cli
 *   the collector's port closed: the command still answers, and the loss is counted
 *   a command that committed nothing: no OpenTelemetry module loaded
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { BIN, ROOT, sandbox, spawnCli, withCodeCache } from '../fixtures/env.js';
import { otlpReceiver } from '../fixtures/otlp/receiver.js';

const RECORDER = join(ROOT, 'test', 'fixtures', 'otlp', 'loaded-modules.cjs');

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

t.test("a short command's audit rows reach the collector before it exits", async (t) => {
  const sb = sandbox('sc-otel-cli');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  // Due only after a minute: what arrives was sent by the flush at the command's end.
  const r = await spawnCli(sb, ['--project', sb.project, 'trust'], '', { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BLRP_SCHEDULE_DELAY: '60000' });
  t.equal(r.code, 0, r.stderr);
  t.same(rx.errors, []);
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const rows = db.prepare("SELECT seq, hash, body FROM audit WHERE body LIKE '%\"cli:trust%'").all() as Array<{ seq: number; hash: string }>;
  t.ok(rows.length > 0, 'trust committed its decision');
  for (const row of rows) {
    const log = rx.logs.find((l) => Number(l.attributes['shadowcode.audit.seq']) === row.seq);
    t.ok(log, `row ${row.seq} arrived as a log record before the command exited`);
    t.equal(log?.attributes['shadowcode.audit.hash'], row.hash, 'with its chain hash');
    t.equal(log?.resource['shadowcode.role'], 'cli', 'from a process of role cli');
  }
  t.notOk(rx.requests.some((q) => q.path !== '/v1/logs'), 'logs only: no span or metric request from a short command');
  const show = await spawnCli(sb, ['--json', 'telemetry', 'show'], '', { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url });
  t.same((JSON.parse(show.stdout) as { processes: unknown[] }).processes, [], 'a short command that lost nothing leaves no counts behind (one file per command would pile up)');
});

t.test("a refused command's denial row reaches the collector too, after its error is printed", async (t) => {
  const sb = sandbox('sc-otel-cli-deny');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  // The project holds the home folder: trust is refused, with a denied decision row.
  const r = await spawnCli({ ...sb, env: { ...sb.env, HOME: sb.project } }, ['--project', sb.root, 'trust'], '', { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BLRP_SCHEDULE_DELAY: '60000' });
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /SC_PROJECT_HOLDS_HOME/);
  const db = openDb(sb.profile, 5000);
  t.teardown(() => db.close());
  const denied = db.prepare("SELECT seq FROM audit WHERE body LIKE '%\"cli:trust%' AND body LIKE '%\"allow\":false%'").all() as Array<{ seq: number }>;
  t.equal(denied.length, 1, 'the refusal is in the audit log');
  t.ok(rx.logs.some((l) => Number(l.attributes['shadowcode.audit.seq']) === denied[0]?.seq), 'and it reached the collector before the command exited');
});

t.test('telemetry set does not send its own decision to the endpoint it has just named', async (t) => {
  const sb = sandbox('sc-otel-cli-set');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const r = await spawnCli(sb, ['telemetry', 'set', '--endpoint', rx.url]);
  t.equal(r.code, 0, r.stderr);
  t.equal(rx.requests.length, 0, 'nothing was sent');
  // The next short command that commits a row does export, to the profile's endpoint.
  t.equal((await spawnCli(sb, ['--project', sb.project, 'trust'])).code, 0);
  t.ok(rx.logs.some((l) => String(l.attributes['shadowcode.action']).startsWith('cli:trust')), 'trust, configured by the profile alone, sent its row');
});

t.test('with the collector down, a short command still answers, and what it could not send is counted', async (t) => {
  const sb = sandbox('sc-otel-cli-down');
  const endpoint = `http://127.0.0.1:${await closedPort()}`;
  const r = await spawnCli(sb, ['--project', sb.project, 'trust'], '', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  t.equal(r.code, 0, r.stderr);
  const show = await spawnCli(sb, ['--json', 'telemetry', 'show'], '', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  const view = JSON.parse(show.stdout) as { processes: Array<{ pid: number; logs: { exported: number; failed: number; dropped: number } }> };
  t.ok(view.processes.some((p) => p.logs.exported === 0 && p.logs.failed + p.logs.dropped > 0), 'the lost rows are counted for telemetry show and status');
});

t.test('a command that committed no audit row loads nothing of OpenTelemetry, configured or not', async (t) => {
  const sb = sandbox('sc-otel-cli-none');
  const rx = await otlpReceiver();
  t.teardown(() => rx.close());
  const child = spawn(process.execPath, ['--require', RECORDER, BIN, 'telemetry', 'show'], { env: withCodeCache({ ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdout.on('data', () => {});
  t.equal(await new Promise((r) => child.on('close', r)), 0);
  const line = stderr.split('\n').find((l) => l.startsWith('loaded-opentelemetry-modules '));
  t.same(line && JSON.parse(line.slice('loaded-opentelemetry-modules '.length)), [], 'no OpenTelemetry module was loaded');
  t.equal(rx.requests.length, 0, 'and nothing was sent');
});
