// Protected paths as policy data: which rule decides a path, however the path
// is spelled (normalised, upper case, trailing slash, through a link), and the
// list a sandbox can bind read-only.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { shippedPolicy } from '../../src/policy/load.js';
import { assertPathAllowed, pathVerdict, protectedPaths } from '../../src/policy/protected-paths.js';

const policy = shippedPolicy();

function project(t: any) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-protect-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const p = join(root, 'proj');
  mkdirSync(join(p, '.git', 'hooks'), { recursive: true });
  return { root, p };
}

t.test('git metadata, shadowcode and host configs are never written, however the path is spelled', async (t) => {
  const { p } = project(t);
  for (const path of ['.git/config', './.git/../.git/config', '.GIT/config', '.git/', '.git', '.git/hooks/pre-commit', 'sub/.git/config', '.shadowcode/servers.yaml', '.mcp.json', '.claude/settings.json', '.Codex/config.toml', '.cursor/mcp.json', '.vscode/tasks.json', `${p}/.git/info/attributes`]) {
    const v = pathVerdict(policy, p, path, 'write');
    t.equal(v.effect, 'refuse', `${path} refused`);
    t.equal(v.list, 'never_write', path);
  }
  t.equal(pathVerdict(policy, p, '.git/config', 'write').rule, 'git-metadata');
  t.equal(pathVerdict(policy, p, '.vscode/tasks.json', 'write').rule, 'host-project-configs');
  t.equal(pathVerdict(policy, p, '.git/config', 'read').effect, 'open', 'reading git metadata stays allowed');
  for (const path of ['.gitignore', 'gitx/config', 'src/.github', '.mcp.json.bak', 'docs/claude/x.md']) t.equal(pathVerdict(policy, p, path, 'write').effect, 'open', `${path} is an ordinary file`);
});

t.test('a link inside the project that points into .git meets the same rule', async (t) => {
  const { p } = project(t);
  symlinkSync(join(p, '.git', 'hooks'), join(p, 'hooks'));
  symlinkSync('.git', join(p, 'g'));
  t.match(pathVerdict(policy, p, 'hooks/pre-commit', 'write'), { effect: 'refuse', rule: 'git-metadata', matched: '.git/hooks/pre-commit' });
  t.match(pathVerdict(policy, p, 'g/config', 'write'), { effect: 'refuse', rule: 'git-metadata' });
});

t.test('manifests, build files and CI workflows need their own approval', async (t) => {
  const { p } = project(t);
  const cases: Array<[string, string]> = [
    ['package.json', 'package-manifests'], ['packages/a/package.json', 'package-manifests'], ['PACKAGE.JSON', 'package-manifests'], ['pyproject.toml', 'package-manifests'],
    ['Makefile', 'build-files'], ['makefile', 'build-files'], ['lib/rules.mk', 'build-files'], ['.envrc', 'build-files'],
    ['.github/workflows/ci.yml', 'ci-workflows'], ['.gitlab-ci.yml', 'ci-workflows'],
  ];
  for (const [path, rule] of cases) t.match(pathVerdict(policy, p, path, 'write'), { effect: 'approve', rule, list: 'needs_approval' }, path);
  t.equal(pathVerdict(policy, p, 'package.json', 'read').effect, 'open', 'reading a manifest is ordinary');
});

t.test('the profile is neither read nor written when it lies inside the project', async (t) => {
  const { p } = project(t);
  const profile = join(p, 'home', 'shadowcode');
  mkdirSync(profile, { recursive: true });
  for (const access of ['read', 'write'] as const) {
    for (const f of ['home/shadowcode/secrets.json', 'home/shadowcode/state.db', './home/../home/shadowcode/settings.json', 'home/shadowcode']) {
      t.match(pathVerdict(policy, p, f, access, profile), { effect: 'refuse', list: 'profile', rule: 'profile-directory' }, `${access} ${f}`);
    }
  }
  t.throws(() => assertPathAllowed(policy, p, 'home/shadowcode/secrets.json', 'read', profile), { code: 'SC_PATH_PROTECTED', message: /profile/ });
  t.equal(pathVerdict(policy, p, 'home/other.txt', 'read', profile).effect, 'open');
});

t.test('protectedPaths lists the patterns and the literal paths a sandbox can bind read-only', async (t) => {
  const l = protectedPaths(policy);
  for (const x of ['.git', '.shadowcode', '.mcp.json', '.claude', '.codex', '.cursor', '.vscode']) t.ok(l.never_write_literal.includes(x), x);
  t.notOk(l.never_write_literal.some((x) => x.includes('*')));
  t.ok(l.needs_approval.includes('**/package.json'));
  t.equal(l.profile_hidden, true);
});
