// Protected paths as policy data: which rule decides a path, however the path
// is spelled (normalised, upper case, trailing slash, through a link), and the
// list a sandbox can bind read-only.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
    ['Makefile', 'build-files'], ['makefile', 'build-files'], ['lib/rules.mk', 'build-files'], ['.envrc', 'environment-and-toolchains'],
    ['.github/workflows/ci.yml', 'ci-workflows'], ['.gitlab-ci.yml', 'ci-workflows'],
  ];
  for (const [path, rule] of cases) t.match(pathVerdict(policy, p, path, 'write'), { effect: 'approve', rule, list: 'needs_approval' }, path);
  t.equal(pathVerdict(policy, p, 'package.json', 'read').effect, 'open', 'reading a manifest is ordinary');
});

// One table per group of policy/protected-paths.json's needs_approval: the list and what it implies.
const APPROVAL_GROUPS: Record<string, string[]> = {
  'package-manifests': ['setup.cfg', 'sub/Pipfile', 'Gemfile', 'lib/x.gemspec', 'composer.json', 'deno.json', 'crates/a/build.rs'],
  'package-manager-hooks': ['.yarnrc', '.yarnrc.yml', '.npmrc', 'web/.npmrc', '.pnpmfile.cjs', 'bunfig.toml', 'pnpm-workspace.yaml', '.yarn/plugins/x.cjs', '.yarn/releases/yarn-4.cjs'],
  'git-hook-managers': ['lefthook.yml', '.lefthook.yaml', '.husky/pre-commit', '.pre-commit-config.yaml', 'lint-staged.config.js', '.lintstagedrc.json', '.simple-git-hooks.json', 'commitlint.config.ts', '.huskyrc', '.huskyrc.json', 'husky.config.js'],
  'git-attributes': ['.gitattributes', 'sub/.gitattributes', '.lfsconfig'],
  'build-files': ['Makefile', 'src/GNUmakefile', 'justfile', 'Rakefile', 'Taskfile.yml', 'CMakeLists.txt', 'cmake/deps.cmake', 'build.gradle.kts', 'gradle/wrapper/gradle-wrapper.properties', 'gradle.properties', 'pom.xml', '.mvn/extensions.xml', 'MODULE.bazel', 'tools/defs.bzl', 'CMakeUserPresets.json', 'build.sbt', 'project/plugins.sbt', 'project/Deps.scala', 'Directory.Build.props', 'src/Directory.Build.targets', 'src/App/App.csproj', 'build.xml', 'mix.exs', 'conanfile.py', 'Package.swift', 'ios/Podfile', 'gulpfile.js', 'Gruntfile.cjs', 'Vagrantfile', 'Brewfile', 'Tiltfile', 'Procfile', 'nx.json'],
  'test-runner-configs': ['conftest.py', 'tests/unit/conftest.py', 'pytest.ini', 'tox.ini', 'noxfile.py', 'jest.config.js', 'vitest.config.ts', 'vitest.workspace.ts', '.mocharc.yml', 'playwright.config.ts', 'karma.conf.js', 'ava.config.mjs', 'cypress.config.ts', '.taprc', 'wdio.conf.ts', '.storybook/main.js', '.nycrc.json', '.coveragerc', 'nodemon.json'],
  'linter-and-bundler-configs': ['eslint.config.js', 'packages/ui/eslint.config.mjs', '.eslintrc', '.eslintrc.cjs', 'prettier.config.js', '.prettierrc.json', 'stylelint.config.js', '.babelrc', 'babel.config.js', 'postcss.config.cjs', 'tailwind.config.ts', 'webpack.config.js', 'vite.config.ts', 'rollup.config.mjs', 'esbuild.config.js', 'next.config.mjs'],
  'environment-and-toolchains': ['.envrc', 'sub/.envrc', '.tool-versions', '.mise.toml', 'mise.toml', 'rust-toolchain.toml', '.cargo/config.toml', 'sitecustomize.py', 'flake.nix', '.python-version', '.irbrc', '.pryrc'],
  'installed-dependencies': ['node_modules/.bin/jest', 'node_modules/jest/bin/jest.js', 'packages/a/node_modules/.bin/tsc', '.venv/bin/pytest', '.venv/lib/python3.11/site-packages/evil.pth', 'env/pyvenv.cfg', 'env/lib/python3.11/site-packages/evil.pth', '.direnv/python-3.11/lib/python3.11/site-packages/x.py', '__pypackages__/3.11/lib/x.pth'],
  'editor-workspace-files': ['app.code-workspace', 'tools/dev.sublime-project'],
  containers: ['.devcontainer/devcontainer.json', '.devcontainer.json', 'Dockerfile', 'docker/app.Dockerfile', 'Dockerfile.dev', 'docker-compose.yml', 'compose.yaml', 'docker-compose.override.yml'],
  'ci-workflows': ['.github/workflows/ci.yml', '.github/actions/setup/action.yml', '.circleci/config.yml', 'Jenkinsfile'],
};

for (const [rule, paths] of Object.entries(APPROVAL_GROUPS)) {
  t.test(`needs_approval group ${rule}: each change is its own approval`, async (t) => {
    const { p } = project(t);
    t.ok(policy.protected_paths.needs_approval.some((r) => r.id === rule), `${rule} is a rule of the shipped policy`);
    for (const path of paths) t.match(pathVerdict(policy, p, path, 'write'), { effect: 'approve', rule, list: 'needs_approval' }, path);
  });
}

t.test('ordinary source files next to those configs need nothing', async (t) => {
  const { p } = project(t);
  for (const path of ['src/app.ts', 'src/build/out.js', 'build/index.js', 'test/conftest_helpers.py', 'docs/eslint.md', 'src/vite.ts', 'lib/jest-utils.js', 'Dockerfiles.md', 'env/.env.example', 'src/compose.ts', 'scripts/mise.sh']) {
    t.equal(pathVerdict(policy, p, path, 'write').effect, 'open', path);
  }
});

t.test('every .git at any depth, .gitmodules and the host configs at any depth are refused, and .shadow/mcp like .shadowcode', async (t) => {
  const { p } = project(t);
  const cases: Array<[string, string]> = [
    ['lib/.git', 'git-metadata'], ['a/b/c/.git/config', 'git-metadata'], ['.git/modules/lib/config', 'git-metadata'], ['vendor/x/.git/hooks/pre-commit', 'git-metadata'],
    ['.gitmodules', 'git-submodules'], ['sub/.gitmodules', 'git-submodules'],
    ['sub/.claude/settings.json', 'host-project-configs'], ['sub/.mcp.json', 'host-project-configs'], ['sub/.vscode/tasks.json', 'host-project-configs'], ['packages/a/b/.cursor/mcp.json', 'host-project-configs'],
    ['.gemini/settings.json', 'host-project-configs'], ['.continue/config.yaml', 'host-project-configs'], ['.windsurf/workflows/x.md', 'host-project-configs'], ['.zed/tasks.json', 'host-project-configs'],
    ['.idea/workspace.xml', 'host-project-configs'], ['.amazonq/mcp.json', 'host-project-configs'], ['.roo/mcp.json', 'host-project-configs'], ['.kiro/hooks/x.json', 'host-project-configs'], ['.aider.conf.yml', 'host-project-configs'], ['web/.codex/config.toml', 'host-project-configs'],
    ['.shadow/mcp/server.json', 'shadowcode-project-files'], ['.shadowcode/mcp/s.yaml', 'shadowcode-project-files'],
  ];
  for (const [path, rule] of cases) t.match(pathVerdict(policy, p, path, 'write'), { effect: 'refuse', rule, list: 'never_write' }, path);
  t.equal(pathVerdict(policy, p, '.shadow/notes.md', 'write').effect, 'open', 'only .shadow/mcp of .shadow');
});

t.test('a protected path that is a link protects what it leads to', async (t) => {
  const { p } = project(t);
  mkdirSync(join(p, 'tools', 'claude-config'), { recursive: true });
  mkdirSync(join(p, 'shared', 'vscode'), { recursive: true });
  mkdirSync(join(p, 'sub'));
  symlinkSync('tools/claude-config', join(p, '.claude'));
  symlinkSync('../shared/vscode', join(p, 'sub', '.vscode'));
  symlinkSync('missing-target', join(p, '.cursor'));
  t.match(pathVerdict(policy, p, 'tools/claude-config/settings.json', 'write'), { effect: 'refuse', rule: 'host-project-configs', matched: 'tools/claude-config/settings.json', via: 'the link .claude leads here' });
  t.match(pathVerdict(policy, p, 'tools/claude-config', 'write'), { effect: 'refuse' }, 'the target folder itself');
  t.match(pathVerdict(policy, p, 'shared/vscode/tasks.json', 'write'), { effect: 'refuse', rule: 'host-project-configs', via: 'the link sub/.vscode leads here' }, 'a nested link too');
  t.throws(() => assertPathAllowed(policy, p, 'tools/claude-config/settings.json', 'write'), { code: 'SC_PATH_PROTECTED', message: /the link \.claude leads here/ });
  t.equal(pathVerdict(policy, p, 'tools/other/settings.json', 'write').effect, 'open', 'a folder beside the target is not');
  t.equal(pathVerdict(policy, p, 'tools/claude-config/settings.json', 'read').effect, 'open', 'reading it stays allowed');
});

/** A project whose repository config names paths: hooks folder, an include, programs. */
function gitProject(t: any, config: string) {
  const { root, p } = project(t);
  writeFileSync(join(p, '.git', 'config'), config);
  return { root, p };
}

t.test('the hooks folder core.hooksPath names is refused like .git/hooks, relative or absolute', async (t) => {
  const { p } = gitProject(t, '[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n');
  t.match(pathVerdict(policy, p, '.githooks/pre-commit', 'write'), { effect: 'refuse', rule: 'git-config-named', list: 'never_write', via: 'core.hooksPath in .git/config' }, 'missing so far, still refused');
  t.match(pathVerdict(policy, p, './.githooks/../.githooks/pre-push', 'write'), { effect: 'refuse', rule: 'git-config-named' });
  t.equal(pathVerdict(policy, p, '.githooks-notes.md', 'write').effect, 'open', 'a name that only starts the same is not');
  writeFileSync(join(p, '.git', 'config'), `[core]\n  HooksPath = "${p}/tools/hooks" ; absolute, quoted, with a comment\n`);
  t.match(pathVerdict(policy, p, 'tools/hooks/commit-msg', 'write'), { effect: 'refuse', rule: 'git-config-named' }, 'an absolute path inside the project, any case of the key');
  writeFileSync(join(p, '.git', 'config'), '[core]\n\thooksPath = /usr/share/hooks\n');
  t.equal(pathVerdict(policy, p, 'tools/hooks/commit-msg', 'write').effect, 'open', 'a hooks folder outside the project names nothing here');
});

t.test('an included config file, what it sets, and the programs of command settings are refused', async (t) => {
  const { p } = gitProject(t, '[include]\n\tpath = ../config/git.inc\n[core]\n\tfsmonitor = scripts/fsmon.sh --fast\n[filter "lfs"]\n\tsmudge = ./bin/smudge %f\n[diff "img"]\n\ttextconv = exiftool\n');
  mkdirSync(join(p, 'config'));
  writeFileSync(join(p, 'config', 'git.inc'), '[core]\n\thooksPath = ci/hooks\n');
  t.match(pathVerdict(policy, p, 'config/git.inc', 'write'), { effect: 'refuse', rule: 'git-config-named', via: 'include.path in .git/config' });
  t.match(pathVerdict(policy, p, 'ci/hooks/pre-commit', 'write'), { effect: 'refuse', via: 'core.hooksPath in config/git.inc' }, 'a hooks folder set by the included file');
  t.match(pathVerdict(policy, p, 'scripts/fsmon.sh', 'write'), { effect: 'refuse', via: 'core.fsmonitor in .git/config' });
  t.match(pathVerdict(policy, p, 'bin/smudge', 'write'), { effect: 'refuse', via: 'filter.*.smudge in .git/config' });
  t.equal(pathVerdict(policy, p, 'exiftool', 'write').effect, 'open', 'a bare program name is found on PATH, not in the project');
});

t.test('a submodule and a linked worktree: the config of the repository its .git file names counts', async (t) => {
  const { root, p } = project(t);
  writeFileSync(join(p, '.git', 'config'), '[core]\n\tbare = false\n');
  mkdirSync(join(p, '.git', 'modules', 'lib'), { recursive: true });
  writeFileSync(join(p, '.git', 'modules', 'lib', 'config'), '[core]\n\thooksPath = hooks\n\tworktree = ../../../lib\n');
  mkdirSync(join(p, 'lib'));
  writeFileSync(join(p, 'lib', '.git'), 'gitdir: ../.git/modules/lib\n');
  t.match(pathVerdict(policy, p, 'lib/.git', 'write'), { effect: 'refuse', rule: 'git-metadata' }, "the submodule's .git file");
  t.match(pathVerdict(policy, p, 'lib/hooks/post-checkout', 'write'), { effect: 'refuse', rule: 'git-config-named', via: 'core.hooksPath in .git/modules/lib/config' }, 'relative to the submodule');
  // A worktree of a repository elsewhere: .git is a file, the config lives in the common folder.
  const main = join(root, 'main');
  mkdirSync(join(main, '.git', 'worktrees', 'wt'), { recursive: true });
  writeFileSync(join(main, '.git', 'config'), '[core]\n\thooksPath = .hooks\n');
  writeFileSync(join(main, '.git', 'worktrees', 'wt', 'commondir'), '../..\n');
  const wt = join(root, 'wt');
  mkdirSync(wt);
  writeFileSync(join(wt, '.git'), `gitdir: ${join(main, '.git', 'worktrees', 'wt')}\n`);
  t.match(pathVerdict(policy, wt, '.hooks/pre-commit', 'write'), { effect: 'refuse', rule: 'git-config-named' }, "the worktree's hooks folder, named in the main repository's config");
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
  for (const x of ['.git', '.shadowcode', '.shadow/mcp', '.gitmodules', '.mcp.json', '.claude', '.codex', '.cursor', '.vscode', '.gemini']) t.ok(l.never_write_literal.includes(x), x);
  t.notOk(l.never_write_literal.some((x) => x.includes('*')));
  t.ok(l.needs_approval.includes('**/package.json'));
  t.equal(l.profile_hidden, true);
});

t.test('a git directory made of HEAD and commondir is refused like .git, and so is the folder it names and what that config names', async (t) => {
  const { p } = project(t);
  // git takes evil/ as a git directory: objects and refs are found through commondir (a linked worktree's layout).
  mkdirSync(join(p, 'x', 'objects'), { recursive: true });
  mkdirSync(join(p, 'x', 'refs'));
  writeFileSync(join(p, 'x', 'config'), '[core]\n\tpager = ../scripts/pager.sh\n');
  mkdirSync(join(p, 'evil'));
  writeFileSync(join(p, 'evil', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(p, 'evil', 'commondir'), '../x\n');
  const probe = spawnSync('git', ['config', '--show-origin', 'core.pager'], { cwd: join(p, 'evil'), env: { ...process.env, GIT_DIR: join(p, 'evil') }, encoding: 'utf8' });
  t.match(probe.stdout, /x\/config/, 'git itself reads x/config from evil/');
  t.match(pathVerdict(policy, p, 'evil/hooks/post-checkout', 'write'), { effect: 'refuse', rule: 'git-metadata' });
  t.match(pathVerdict(policy, p, 'x/config', 'write'), { effect: 'refuse', rule: 'git-metadata', via: 'the common git directory evil/commondir names' });
  t.match(pathVerdict(policy, p, 'scripts/pager.sh', 'write'), { effect: 'refuse', rule: 'git-config-named' }, 'the program its config runs');
});

t.test('a git directory by another name (a bare repository in the project) is refused like .git, and what its config names too', async (t) => {
  const { p } = project(t);
  // git's own layout: `git init --bare vendor/lib.git`.
  const init = spawnSync('git', ['init', '-q', '--bare', join(p, 'vendor', 'lib.git')], { encoding: 'utf8' });
  t.equal(init.status, 0, init.stderr);
  writeFileSync(join(p, 'vendor', 'lib.git', 'config'), '[core]\n\tbare = true\n\tfsmonitor = ../../scripts/fsmon.sh\n');
  // A hand-made one: HEAD, objects, refs are all git looks for.
  mkdirSync(join(p, 'data', 'objects'), { recursive: true });
  mkdirSync(join(p, 'data', 'refs'));
  writeFileSync(join(p, 'data', 'HEAD'), 'ref: refs/heads/main\n');
  // Two of the three are not a git directory.
  mkdirSync(join(p, 'notes', 'refs'), { recursive: true });
  writeFileSync(join(p, 'notes', 'HEAD'), 'x');
  t.match(pathVerdict(policy, p, 'vendor/lib.git/hooks/post-update', 'write'), { effect: 'refuse', rule: 'git-metadata', list: 'never_write', via: 'a git directory (HEAD, objects, refs) by another name' });
  t.match(pathVerdict(policy, p, 'vendor/lib.git/config', 'write'), { effect: 'refuse', rule: 'git-metadata' });
  t.match(pathVerdict(policy, p, 'data/config', 'write'), { effect: 'refuse', rule: 'git-metadata' }, 'a config git would read there, created');
  t.match(pathVerdict(policy, p, 'scripts/fsmon.sh', 'write'), { effect: 'refuse', rule: 'git-config-named', via: 'core.fsmonitor in vendor/lib.git/config' }, 'the program its config runs');
  t.equal(pathVerdict(policy, p, 'notes/HEAD', 'write').effect, 'open');
  t.equal(pathVerdict(policy, p, 'vendor/other', 'write').effect, 'open');
});

t.test('a project that is a folder of a bigger repository: what that repository config names inside the project is refused', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-protect-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const init = spawnSync('git', ['init', '-q', join(root, 'mono')], { encoding: 'utf8' });
  t.equal(init.status, 0, init.stderr);
  const p = join(root, 'mono', 'app');
  mkdirSync(join(p, 'src'), { recursive: true });
  writeFileSync(join(root, 'mono', '.git', 'config'), '[core]\n\thooksPath = app/githooks\n\tfsmonitor = app/tools/fsmon.sh\n');
  // git run in the project uses that config: the control.
  t.equal(spawnSync('git', ['config', 'core.hooksPath'], { cwd: p, encoding: 'utf8' }).stdout.trim(), 'app/githooks');
  const cfg = join(root, 'mono', '.git', 'config');
  t.match(pathVerdict(policy, p, 'githooks/pre-commit', 'write'), { effect: 'refuse', rule: 'git-config-named', via: `core.hooksPath in ${cfg}` }, 'the hooks folder, missing so far');
  t.match(pathVerdict(policy, p, 'tools/fsmon.sh', 'write'), { effect: 'refuse', rule: 'git-config-named', via: `core.fsmonitor in ${cfg}` });
  t.equal(pathVerdict(policy, p, 'src/main.ts', 'write').effect, 'open');
  // With a repository of its own, git stops there: the bigger one's config no longer applies.
  spawnSync('git', ['init', '-q', p]);
  t.equal(pathVerdict(policy, p, 'tools/fsmon.sh', 'write').effect, 'open', 'its own repository hides the outer one');
});
