import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { readAudit } from '../../src/store/audit.js';
import { cli, connection, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';

t.test('trust records the canonical project at the chosen level, and untrust withdraws it', async (t) => {
  const sb = sandbox();
  const link = join(sb.root, 'link');
  symlinkSync(sb.project, link);
  const r = await cli(sb, ['--json', '--workspace', link, 'trust', '--level', 'elevated']);
  t.equal(r.code, 0, r.stderr);
  t.match(JSON.parse(r.stdout).project, { path: sb.project, trusted: true, level: 'elevated' }, 'the symlink is resolved to the real path');
  const s = JSON.parse((await cli(sb, ['--json', '--workspace', sb.project, 'status'])).stdout);
  t.match(s.project, { path: sb.project, trusted: true, level: 'elevated' });
  const u = await cli(sb, ['--json', '--workspace', sb.project, 'untrust']);
  t.match(JSON.parse(u.stdout).project, { trusted: false, level: 'read_only' });
});

t.test('trust defaults to the workspace level', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--workspace', sb.project, 'trust']);
  t.equal(r.stdout, `trusted ${sb.project} at level workspace\n`);
});

t.test('every trust change is an audited gate decision', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--workspace', sb.project, 'trust']);
  await cli(sb, ['--workspace', sb.project, 'untrust']);
  const db = openDb(sb.profile, 1000);
  t.teardown(() => db.close());
  const rows = readAudit(db, { kinds: ['decision'], limit: 10 }).map((r) => r.body as { action: string; allow: boolean; project: string });
  t.same(fields(rows, ['action', 'allow', 'project']), [
    { action: 'cli:trust', allow: true, project: sb.project },
    { action: 'cli:untrust', allow: true, project: sb.project },
  ], 'one decision per change, no other');
});

t.test('trust refuses a missing workspace, a nonexistent one, a file, and an unknown level', async (t) => {
  const sb = sandbox();
  const missing = await cli(sb, ['--json', 'trust']);
  t.equal(missing.code, 2);
  t.equal(JSON.parse(missing.stdout).error.code, 'SC_WORKSPACE_REQUIRED');
  const none = await cli(sb, ['--workspace', join(sb.root, 'nope'), 'trust']);
  t.equal(none.code, 2, 'a missing directory is a bad value');
  t.match(none.stderr, /project .* does not exist \[SC_WORKSPACE_INVALID\]/);
  const file = await cli(sb, ['--workspace', join(sb.root, 'profile'), 'status']);
  t.equal(file.code, 2, 'the profile dir does not exist yet, so it is a missing workspace too');
  const bad = await cli(sb, ['--workspace', sb.project, 'trust', '--level', 'root']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--level must be one of read_only, workspace, elevated \[SC_BAD_VALUE\]/);
  t.notMatch(bad.stderr, /root/, 'the bad value is not echoed: it may be something pasted by mistake');
});

t.test('trust --network allows remote endpoints, keeps the level, shows in status; --no-network and untrust withdraw it', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--workspace', sb.project, 'trust', '--level', 'elevated']);
  const r = await cli(sb, ['--workspace', sb.project, 'trust', '--network']);
  t.equal(r.stdout, `trusted ${sb.project} at level elevated, network allowed\n`, 'a network change alone keeps the level');
  const s = await cli(sb, ['--json', '--workspace', sb.project, 'status']);
  t.match(JSON.parse(s.stdout).project, { trusted: true, level: 'elevated', network: true });
  t.match((await cli(sb, ['--workspace', sb.project, 'status'])).stdout, /network {3}allowed/);
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust', '--level', 'workspace'])).stdout, `trusted ${sb.project} at level workspace, network allowed\n`, 'a level change keeps network');
  t.equal((await cli(sb, ['--workspace', sb.project, 'trust', '--no-network'])).stdout, `trusted ${sb.project} at level workspace, network off\n`);
  await cli(sb, ['--workspace', sb.project, 'trust', '--network']);
  await cli(sb, ['--workspace', sb.project, 'untrust']);
  t.match(JSON.parse((await cli(sb, ['--json', '--workspace', sb.project, 'status'])).stdout).project, { trusted: false, network: false });
  t.match((await cli(sb, ['--workspace', sb.project, 'status'])).stdout, /network {3}off: loopback models and servers only/);
});

t.test('trust refuses --network with --no-network', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--json', '--workspace', sb.project, 'trust', '--network', '--no-network']);
  t.equal(r.code, 2);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_USAGE');
});

t.test('the network permission reaches the gate: remote model requests follow it, loopback ones work with it off', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--workspace', sb.project, 'trust']);
  const { explain } = await import('../../src/policy/gate.js');
  const { conn, close } = await connection(sb);
  t.teardown(close);
  const decide = (endpoint_kind: 'loopback' | 'remote') => explain(conn.engine.policy, conn.requestNow('model:request', { resource: { model: 'm', endpoint_kind, host: endpoint_kind === 'remote' ? 'api.example.com' : '127.0.0.1' } }));
  const why = (endpoint_kind: 'loopback' | 'remote') => fields([decide(endpoint_kind)], ['allow', 'reasons'])[0];
  t.same(why('remote'), { allow: false, reasons: ['remote-model-needs-network'] });
  t.same(why('loopback'), { allow: true, reasons: ['model-request'] });
  await cli(sb, ['--workspace', sb.project, 'trust', '--network']);
  t.same(why('remote'), { allow: true, reasons: ['model-request'] });
  await cli(sb, ['--workspace', sb.project, 'trust', '--no-network']);
  t.match(decide('remote'), { allow: false });
  t.match(decide('loopback'), { allow: true });
});
