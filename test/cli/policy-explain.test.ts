import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, sandbox } from '../fixtures/env.js';

t.test('policy explain shows the rules that decide, without doing anything', async (t) => {
  const sb = sandbox();
  const denied = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'policy', 'explain', 'tool:shadow_memory.append', '--allow-write'])).stdout);
  t.equal(denied.allow, false);
  t.same(denied.rules.map((r: { id: string }) => r.id).sort(), ['write-needs-trust', 'write-needs-workspace-level']);
  await cli(sb, ['--project', sb.project, 'trust']);
  const allowed = await cli(sb, ['--project', sb.project, 'policy', 'explain', 'tool:shadow_memory.append', '--allow-write']);
  t.match(allowed.stdout, /^ALLOW tool:shadow_memory.append \(ceiling workspace\)\n {2}permit write:/);
  const bad = await cli(sb, ['--json', 'policy', 'explain', 'Not An Action']);
  t.equal(JSON.parse(bad.stdout).error.code, 'SC_POLICY_REQUEST_INVALID');
});

t.test('policy explain file:write:PATH and file:read:PATH name the protected-path rule that decides', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const git = await cli(sb, ['--project', sb.project, 'policy', 'explain', 'file:write:./.git/../.GIT/config']);
  t.match(git.stdout, /^DENY file:write \.\/\.git\/\.\.\/\.GIT\/config \(ceiling workspace\)\n {2}permit engine-runs-approved-work:.*\n {2}refuse never_write git-metadata: .*\(matched \.GIT\/config\)\n {2}sandbox: read-only for approved commands\nassumed:\n {2}the engine asks, for a task at level workspace/);
  const manifest = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'policy', 'explain', 'file:write:packages/web/package.json'])).stdout);
  t.match(manifest, { action: 'file:write', allow: true, needs_approval: true, path_rule: { list: 'needs_approval', id: 'package-manifests', matched: 'packages/web/package.json' } });
  const plain = await cli(sb, ['--project', sb.project, 'policy', 'explain', 'file:write:src/app.ts']);
  t.match(plain.stdout, /^ALLOW file:write src\/app\.ts \(ceiling workspace\)\n.*\n {2}no protected-path rule applies\n {2}sandbox: writable for approved commands\nassumed:\n/);
  const inside = { ...sb, env: { ...sb.env, SHADOWCODE_HOME: `${sb.project}/home/sc` } };
  await cli(inside, ['--project', sb.project, 'trust']);
  const secrets = JSON.parse((await cli(inside, ['--json', '--project', sb.project, 'policy', 'explain', 'file:read:home/sc/secrets.json'])).stdout);
  t.match(secrets, { action: 'file:read', allow: false, path_rule: { list: 'profile', id: 'profile-directory', effect: 'refuse' } });
  const untrusted = JSON.parse((await cli(sandbox(), ['--json', '--project', sb.project, 'policy', 'explain', 'file:write:.git/config'])).stdout);
  t.equal(untrusted.allow, false);
});

t.test('policy explain names the rule for what no pattern says (a hooks folder git config names, a protected link\'s target) and what the sandbox does there', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  mkdirSync(join(sb.project, '.git'));
  writeFileSync(join(sb.project, '.git', 'config'), '[core]\n\thooksPath = .githooks\n');
  mkdirSync(join(sb.project, 'tools', 'claude-config'), { recursive: true });
  symlinkSync('tools/claude-config', join(sb.project, '.claude'));
  mkdirSync(join(sb.project, 'pkg', '.vscode'), { recursive: true });
  const explain = async (path: string) => JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'policy', 'explain', `file:write:${path}`])).stdout);
  const hooks = await cli(sb, ['--project', sb.project, 'policy', 'explain', 'file:write:.githooks/pre-commit']);
  t.match(hooks.stdout, / {2}refuse never_write git-config-named: .*\(matched \.githooks\/pre-commit: core\.hooksPath in \.git\/config\)\n {2}sandbox: read-only for approved commands\n/);
  t.match(await explain('tools/claude-config/settings.json'), { allow: false, path_rule: { id: 'host-project-configs', via: 'the link .claude leads here' }, sandbox: 'read_only' });
  t.match(await explain('pkg/.vscode/tasks.json'), { allow: false, path_rule: { id: 'host-project-configs' }, sandbox: 'read_only' }, 'a nested one that exists is bound read-only');
  t.match(await explain('other/.vscode/tasks.json'), { allow: false, sandbox: 'created_later' }, 'one that does not exist yet cannot be held');
  t.match(await explain('.mcp.json'), { allow: false, sandbox: 'read_only' }, 'a top-level one is held even while missing');
  t.match(await explain('eslint.config.js'), { allow: true, needs_approval: true, path_rule: { id: 'linter-and-bundler-configs' }, sandbox: 'writable' });
});

t.test('an action the policy does not know is named as such, with the nearest one; --list shows them', async (t) => {
  const sb = sandbox();
  const nope = await cli(sb, ['policy', 'explain', 'tool:shadow_nope']);
  t.equal(nope.code, 0);
  t.match(nope.stdout, /^DENY tool:shadow_nope \(ceiling read_only\)\n {2}tool:shadow_nope is not an action this policy knows \(shadowcode policy explain --list shows them\)\n {2}forbid default-deny/);
  const typo = JSON.parse((await cli(sb, ['--json', 'policy', 'explain', 'tool:shadow_stauts'])).stdout);
  t.match(typo, { known: false, suggestion: 'tool:shadow_status', allow: false });
  for (const [action, as] of [['tool:shadow_status', 'stdio'], ['cli:trust', 'cli'], ['task:tool.read_file', 'stdio']] as const) {
    const r = JSON.parse((await cli(sb, ['--json', 'policy', 'explain', action, '--as', as])).stdout);
    t.equal(r.known, true, `${action} is known`);
  }
  const list = await cli(sb, ['policy', 'explain', '--list']);
  t.equal(list.code, 0);
  const lines = list.stdout.trim().split('\n');
  t.ok(lines.includes('tool:shadow_status') && lines.includes('tool:shadow_memory.append'), 'the named actions');
  t.ok(lines.includes('cli:*  (any action of this family)'), 'and the families covered by pattern');
  t.notOk(lines.includes('tool:shadow_nope'));
  const none = await cli(sb, ['--json', 'policy', 'explain']);
  t.equal(none.code, 2);
  t.match(JSON.parse(none.stdout).error, { code: 'SC_USAGE', message: /--list/ });
});
