import { existsSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openDb } from '../../src/store/db.js';
import { readAudit } from '../../src/store/audit.js';
import { cli, connection, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { connect, structured } from '../fixtures/mcp.js';

t.test('trust records the canonical project at the chosen level, and untrust withdraws it', async (t) => {
  const sb = sandbox();
  const link = join(sb.root, 'link');
  symlinkSync(sb.project, link);
  const r = await cli(sb, ['--json', '--project', link, 'trust', '--level', 'elevated']);
  t.equal(r.code, 0, r.stderr);
  t.match(JSON.parse(r.stdout).project, { path: sb.project, trusted: true, level: 'elevated' }, 'the symlink is resolved to the real path');
  const s = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'status'])).stdout);
  t.match(s.project, { path: sb.project, trusted: true, level: 'elevated' });
  const u = await cli(sb, ['--json', '--project', sb.project, 'untrust']);
  t.match(JSON.parse(u.stdout).project, { trusted: false, level: 'read_only' });
});

t.test('trust defaults to the workspace level, and says the network is off', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--project', sb.project, 'trust']);
  t.equal(r.stdout, `trusted ${sb.project} at level workspace, network off\n`);
});

t.test('every trust change is an audited gate decision', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  await cli(sb, ['--project', sb.project, 'untrust']);
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
  const none = await cli(sb, ['--project', join(sb.root, 'nope'), 'trust']);
  t.equal(none.code, 2, 'a missing directory is a bad value');
  t.match(none.stderr, /project .* does not exist \[SC_WORKSPACE_INVALID\]/);
  const file = await cli(sb, ['--project', join(sb.root, 'profile'), 'status']);
  t.equal(file.code, 2, 'the profile dir does not exist yet, so it is a missing workspace too');
  const bad = await cli(sb, ['--project', sb.project, 'trust', '--level', 'root']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--level must be one of read_only, workspace, elevated \[SC_BAD_VALUE\]/);
  t.notMatch(bad.stderr, /root/, 'the bad value is not echoed: it may be something pasted by mistake');
});

t.test('trust --network allows remote endpoints, keeps the level, shows in status; --no-network and untrust withdraw it', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'elevated']);
  const r = await cli(sb, ['--project', sb.project, 'trust', '--network']);
  t.equal(r.stdout, `trusted ${sb.project} at level elevated, network allowed\n`, 'a network change alone keeps the level');
  const s = await cli(sb, ['--json', '--project', sb.project, 'status']);
  t.match(JSON.parse(s.stdout).project, { trusted: true, level: 'elevated', network: true });
  t.match((await cli(sb, ['--project', sb.project, 'status'])).stdout, /network {3}allowed/);
  t.equal((await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace'])).stdout, `trusted ${sb.project} at level workspace, network allowed (kept from before; --no-network withdraws it)\n`, 'a level change keeps network, and says so');
  t.equal((await cli(sb, ['--project', sb.project, 'trust', '--no-network'])).stdout, `trusted ${sb.project} at level workspace, network off\n`);
  t.equal((await cli(sb, ['--project', sb.project, 'trust', '--level', 'elevated'])).stdout, `trusted ${sb.project} at level elevated, network off\n`, 'a network kept off is said too');
  await cli(sb, ['--project', sb.project, 'trust', '--network']);
  await cli(sb, ['--project', sb.project, 'untrust']);
  t.match(JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'status'])).stdout).project, { trusted: false, network: false });
  t.match((await cli(sb, ['--project', sb.project, 'status'])).stdout, /network {3}off: loopback models and servers only/);
});

t.test('trust refuses --network with --no-network', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--json', '--project', sb.project, 'trust', '--network', '--no-network']);
  t.equal(r.code, 2);
  t.equal(JSON.parse(r.stdout || r.stderr).error.code, 'SC_USAGE');
});

t.test('the network permission reaches the gate: remote model requests follow it, loopback ones work with it off', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const { explain } = await import('../../src/policy/gate.js');
  const { conn, close } = await connection(sb);
  t.teardown(close);
  const decide = (endpoint_kind: 'loopback' | 'remote') => explain(conn.engine.policy, conn.requestNow('model:request', { resource: { model: 'm', endpoint_kind, host: endpoint_kind === 'remote' ? 'api.example.com' : '127.0.0.1' } }));
  const why = (endpoint_kind: 'loopback' | 'remote') => fields([decide(endpoint_kind)], ['allow', 'reasons'])[0];
  t.same(why('remote'), { allow: false, reasons: ['remote-model-needs-network'] });
  t.same(why('loopback'), { allow: true, reasons: ['model-request'] });
  await cli(sb, ['--project', sb.project, 'trust', '--network']);
  t.same(why('remote'), { allow: true, reasons: ['model-request'] });
  await cli(sb, ['--project', sb.project, 'trust', '--no-network']);
  t.match(decide('remote'), { allow: false });
  t.match(decide('loopback'), { allow: true });
});

t.test('trust --json says whether this call changed the network permission', async (t) => {
  const sb = sandbox();
  const data = async (...argv: string[]) => JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'trust', ...argv])).stdout);
  t.match(await data('--network'), { project: { network: true }, network_changed: true });
  t.match(await data('--level', 'read_only'), { project: { network: true, level: 'read_only' }, network_changed: false });
  t.match(await data('--network'), { network_changed: false });
  t.match(await data('--no-network'), { project: { network: false }, network_changed: true });
});

t.test('trust refuses the home folder, a folder holding it and /, with SC_PROJECT_HOLDS_HOME, and stores nothing', async (t) => {
  const sb = sandbox();
  // The sandbox's HOME is its root: the project folder is inside it, the root is the home itself.
  const above = join(sb.root, '..');
  for (const [dir, what] of [[sb.root, 'your home folder'], [realpathSync(above), `a folder holding your home folder ${sb.root}`], ['/', 'the root folder']] as const) {
    const r = await cli(sb, ['--project', dir, 'trust', '--level', 'elevated']);
    t.equal(r.code, 3, `${dir}: exit 3 (denied)`);
    t.equal(r.stdout, '');
    t.equal(r.stderr, `shadowcode: ${dir} is ${what}: a task trusted there could change your shell start-up files, git and SSH configuration and read your keys, so it is not trusted. Trust the project's own folder instead (shadowcode --project DIR trust) [rule project-holds-home] [SC_PROJECT_HOLDS_HOME]\n`);
    const j = JSON.parse((await cli(sb, ['--json', '--project', dir, 'trust'])).stdout);
    t.match(j.error, { code: 'SC_PROJECT_HOLDS_HOME', detail: { reasons: ['project-holds-home'], project: dir } });
    t.match(JSON.parse((await cli(sb, ['--json', '--project', dir, 'status'])).stdout).project, { trusted: false }, 'nothing was stored');
  }
  t.equal((await cli(sb, ['--project', sb.project, 'trust'])).code, 0, 'a project inside the home is trusted as before');
  const db = openDb(sb.profile, 1000);
  t.teardown(() => db.close());
  const rows = readAudit(db, { kinds: ['decision'], limit: 20 }).map((r) => r.body as { action: string; allow: boolean; reasons: string[] });
  t.match(rows.filter((r) => r.action === 'cli:trust' && !r.allow), [{ reasons: ['project-holds-home'] }], 'the refusal is an audited decision');
});

t.test('policy explain shows the rule that refuses a home project', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--project', sb.root, 'policy', 'explain', 'cli:trust', '--as', 'cli']);
  t.match(r.stdout, /^DENY cli:trust .*\n {2}forbid project-holds-home: A project that is \/, your home folder or a folder holding it is never trusted/);
  t.match((await cli(sb, ['--project', sb.project, 'policy', 'explain', 'cli:trust', '--as', 'cli'])).stdout, /^ALLOW cli:trust/);
  t.match((await cli(sb, ['--project', sb.root, 'policy', 'explain', 'file:write:.bashrc'])).stdout, /^DENY file:write \.bashrc[^\n]*\n(.*\n)*? {2}forbid project-holds-home/);
});

t.test('a home project trusted by an older version is refused at use: tests, runs and every write or command', async (t) => {
  const sb = sandbox();
  await cli(sb, ['status']); // makes the profile
  const db = openDb(sb.profile, 1000);
  // As an older shadowcode stored it, before trust refused the home folder.
  db.prepare("INSERT INTO projects (path, trusted, level, trusted_at, updated_at, network) VALUES (?, 1, 'elevated', ?, ?, 1)").run(sb.root, new Date().toISOString(), new Date().toISOString());
  db.close();
  writeFileSync(join(sb.root, '.bashrc'), 'echo hi\n');
  t.match((await cli(sb, ['--project', sb.root, 'status'])).stdout, /\nrefused {3}it is \/, your home folder or holds it: .*\(rule project-holds-home\)\ntrust {5}trusted at elevated/, 'status says why');
  t.match(JSON.parse((await cli(sb, ['--json', '--project', sb.root, 'status'])).stdout).project, { trusted: true, holds_home: true });
  t.match(JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'status'])).stdout).project, { holds_home: false });
  const r = await cli(sb, ['--json', '--project', sb.root, 'test', '--yes', '--', 'sh', '-c', 'echo pwned >> .bashrc']);
  t.equal(r.code, 3);
  t.match(JSON.parse(r.stdout).error, { code: 'SC_PROJECT_HOLDS_HOME', detail: { reasons: ['project-holds-home'] } });
  t.equal(readFileSync(join(sb.root, '.bashrc'), 'utf8'), 'echo hi\n', 'nothing ran');
  for (const action of ['tool:shadow_run', 'task:tool.read_file', 'task:tool.write_file', 'file:write', 'job:run', 'runner:spawn', 'mcp:connect', 'engine:submit']) {
    const e = JSON.parse((await cli(sb, ['--json', '--project', sb.root, 'policy', 'explain', action, '--allow-write'])).stdout);
    t.match(e, { allow: false, rules: [{ id: 'project-holds-home', effect: 'forbid' }] }, action);
  }
  const u = await cli(sb, ['--project', sb.root, 'untrust']);
  t.equal(u.code, 0, 'untrust still works, to clean up');
});

t.test('through an MCP connection too: a home project trusted before is refused its tests and tasks, with the rule named', async (t) => {
  const sb = sandbox();
  await cli(sb, ['status']);
  const db = openDb(sb.profile, 1000);
  db.prepare("INSERT INTO projects (path, trusted, level, trusted_at, updated_at, network) VALUES (?, 1, 'elevated', ?, ?, 0)").run(sb.root, new Date().toISOString(), new Date().toISOString());
  db.close();
  const peer = await connect(sb, 'v2-modern', ['--allow-write'], sb.root);
  t.teardown(() => peer.close());
  for (const [name, args] of [['shadow_test', { command: ['sh', '-c', 'echo x >> .bashrc'] }], ['shadow_run', { mode: 'build', prompt: 'add my key to .ssh/authorized_keys' }]] as const) {
    const r = await peer.callTool({ name, arguments: args });
    t.equal(r.isError, true, name);
    t.match(structured(r), { error: { code: 'SC_PROJECT_HOLDS_HOME', detail: { reasons: ['project-holds-home'] } } }, name);
    t.match(JSON.stringify(r.content), /project-holds-home/, `${name}: the rule is named`);
  }
  t.notOk(existsSync(join(sb.root, '.bashrc')));
});

t.test('trust warns when a folder of the project, or a relative entry, is on PATH: what a task plants there would be your next command', async (t) => {
  const sb = sandbox();
  const clean = await cli(sb, ['--project', sb.project, 'trust']);
  t.equal(clean.stdout, `trusted ${sb.project} at level workspace, network off\n`, 'the control: no warning with an ordinary PATH');
  sb.env.PATH = [join(sb.project, 'bin'), '/usr/bin', '.', '/bin'].join(':');
  const r = await cli(sb, ['--project', sb.project, 'trust']);
  t.equal(r.code, 0, r.stderr);
  const [first, warning] = r.stdout.split('\n');
  t.equal(first, `trusted ${sb.project} at level workspace, network off`);
  t.equal(warning, `warning: PATH runs programs from inside ${sb.project}: ${join(sb.project, 'bin')}, "." (relative: the current folder's, so the project's when you work in it). A command a task runs can write there, and what it leaves (a git, an ls) is what your shell runs next, outside any sandbox; take these entries out of PATH`);
  const j = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'trust'])).stdout);
  t.match(j.path_warning, /^PATH runs programs from inside /);
});
