import t from 'tap';
import { shippedPolicy } from '../../src/policy/load.js';
import { isValid } from '../../src/schema/validate.js';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';

t.test('status --json matches its schema and names project, trust, profile, versions and policy hash', async (t) => {
  const sb = sandbox();
  const r = await spawnCli(sb, ['--json', '--project', sb.project, 'status']);
  t.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  t.ok(isValid('status', s));
  t.match(s, {
    project: { path: sb.project, trusted: false, level: 'read_only' },
    profile: { path: sb.profile },
    versions: { node: process.versions.node, protocols: ['2026-07-28', '2025-11-25'] },
    policy: { hash: shippedPolicy().hash },
  });
  t.equal(r.stderr, '', 'nothing on stderr');
});

t.test('status without --project says no project is selected', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['status']);
  t.equal(r.code, 0);
  t.match(r.stdout, /project\s+none selected \(use --project DIR\)/);
  t.equal(JSON.parse((await cli(sb, ['--json', 'status'])).stdout).project, null);
});

t.test('--profile NAME selects a named profile under the data home', async (t) => {
  const sb = sandbox();
  const env: NodeJS.ProcessEnv = { ...sb.env, XDG_DATA_HOME: sb.root };
  delete env.SHADOWCODE_HOME;
  const r = await cli({ ...sb, env }, ['--json', '--profile', 'work', 'status']);
  t.equal(JSON.parse(r.stdout).profile.path, `${sb.root}/shadowcode/profiles/work`);
});
