// What the sandbox keeps read-only below the top of the project, for real with bwrap: a
// submodule's .git file and .git/modules (the attack: replace lib/.git with a
// copy of .git/modules/lib plus core.fsmonitor), .gitmodules, the hooks folder
// core.hooksPath names, host configs at any depth, and what a protected link leads to.
// Each as root and as an ordinary user (uid 65534), since bwrap's mounts differ by who
// starts it. What a command creates where nothing could be held is listed afterwards.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pendingApprovals } from '../../../src/engine/jobs.js';
import { decideAsCli } from '../../fixtures/decide.js';
import { confinedCommand, SCAN_INCOMPLETE, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { protectedCreatedEvent } from '../../../src/engine/process.js';
import { withSandboxLimits } from '../../fixtures/sandboxed.js';
import { readAudit } from '../../../src/store/audit.js';
import { agentBench, type Scripted, scripted } from '../../fixtures/agent.js';
import { until } from '../../fixtures/env.js';

// Placeholders given back right after each sandbox (shipped: a while later, sandbox.test.ts), so each start here makes its own.
const policy = withSandboxLimits({ placeholder_linger_ms: 0 });
const ROOT = process.getuid?.() === 0;
/** Who starts bwrap: root itself, and (when this runs as root) an ordinary user. */
const WHO: Array<{ name: string; uid?: number }> = ROOT ? [{ name: 'root' }, { name: 'an ordinary user', uid: 65534 }] : [{ name: 'this user' }];

function bwrap(): string {
  const b = sandboxSupport().bwrap;
  if (!b) throw new Error('bwrap is needed here (apt-get install -y bubblewrap)');
  return b;
}

function world(t: any, uid?: number) {
  // The ordinary user must get through this test process's own temp folder (0700) to the project.
  if (uid !== undefined) chmodSync(tmpdir(), 0o711);
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-protected-binds-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  chmodSync(root, 0o755);
  const project = join(root, 'project');
  const profile = join(root, 'profile');
  mkdirSync(project);
  mkdirSync(profile, { mode: 0o700 });
  const own = () => {
    if (uid !== undefined) spawnSync('chown', ['-R', `${uid}:${uid}`, root]);
  };
  return { root, project, profile, own };
}

/** Runs `sh -c script` in the sandbox the spawn point builds for this project; its stdout, and what it created among the protected paths. */
function inside(w: ReturnType<typeof world>, script: string, uid?: number): { out: string; created: string[] } {
  w.own();
  const p = confinedCommand(
    { argv: ['/bin/sh', '-c', script], cwd: w.project, env: { PATH: '/usr/bin:/bin', HOME: join(w.root, 'home') }, confine: { project: w.project, network: false }, trustedArgv: false, policy },
    bwrap(),
    w.profile,
    // Built for whoever starts bwrap: its process bound differs for root and an ordinary user.
    uid ?? process.getuid?.() ?? -1,
  );
  let out = '';
  try {
    const r = spawnSync(p.argv[0] as string, p.argv.slice(1), { encoding: 'utf8', cwd: w.project, ...(uid !== undefined ? { uid, gid: uid } : {}) });
    if (!r.stdout) throw new Error(`sandbox failed (${r.status}): ${r.stderr}`);
    out = r.stdout;
  } finally {
    p.release();
  }
  return { out, created: p.created() };
}

const attempt = (label: string, cmd: string) => `(${cmd}) >/dev/null 2>&1 && echo "DID ${label}" || echo "NOT ${label}"`;

/** A repository with a submodule at lib/, its git directory in .git/modules/lib. */
function withSubmodule(project: string) {
  mkdirSync(join(project, '.git', 'modules', 'lib'), { recursive: true });
  writeFileSync(join(project, '.git', 'config'), '[core]\n\tbare = false\n');
  writeFileSync(join(project, '.git', 'modules', 'lib', 'config'), '[core]\n\tbare = false\n\tworktree = ../../../lib\n');
  writeFileSync(join(project, '.gitmodules'), '[submodule "lib"]\n\tpath = lib\n\turl = https://example.com/lib.git\n');
  mkdirSync(join(project, 'lib'));
  writeFileSync(join(project, 'lib', '.git'), 'gitdir: ../.git/modules/lib\n');
  writeFileSync(join(project, 'lib', 'lib.c'), 'int x;\n');
}

for (const who of WHO) {
  t.test(`${who.name}: a submodule's .git cannot be replaced, nor .git/modules or .gitmodules changed; its sources stay writable`, async (t) => {
    const w = world(t, who.uid);
    withSubmodule(w.project);
    const { out } = inside(
      w,
      [
        attempt('append-gitfile', 'echo x >> lib/.git'),
        attempt('rm-gitfile', 'rm -f lib/.git'),
        attempt('replace-gitfile', 'cp -r .git/modules/lib /tmp/m && printf "[core]\\n\\tfsmonitor = ./evil.sh\\n" >> /tmp/m/config && rm -rf lib/.git && cp -r /tmp/m lib/.git'),
        attempt('move-lib', 'mv lib lib-aside && mkdir lib && cp -r .git/modules/lib lib/.git'),
        attempt('rm-lib', 'rm -rf lib'),
        attempt('modules-config', 'echo "[core] fsmonitor = ./evil.sh" >> .git/modules/lib/config'),
        attempt('gitmodules', 'echo x >> .gitmodules'),
        attempt('lib-source', 'echo "int y;" >> lib/lib.c'),
      ].join('; '),
      who.uid,
    );
    for (const what of ['append-gitfile', 'rm-gitfile', 'replace-gitfile', 'move-lib', 'rm-lib', 'modules-config', 'gitmodules']) t.match(out, `NOT ${what}`, `${what}: ${out}`);
    t.match(out, 'DID lib-source', "the submodule's own files are ordinary project files");
    t.equal(readFileSync(join(w.project, 'lib', '.git'), 'utf8'), 'gitdir: ../.git/modules/lib\n', 'lib/.git is the same file');
    t.notMatch(readFileSync(join(w.project, '.git', 'modules', 'lib', 'config'), 'utf8'), /fsmonitor/);
    t.notOk(existsSync(join(w.project, 'lib-aside')));
  });

  t.test(`${who.name}: the hooks folder core.hooksPath names is read-only, and held while it does not exist`, async (t) => {
    const w = world(t, who.uid);
    mkdirSync(join(w.project, '.git'));
    writeFileSync(join(w.project, '.git', 'config'), '[core]\n\thooksPath = .githooks\n');
    const missing = inside(w, [attempt('create-hook', 'mkdir -p .githooks && echo "#!/bin/sh" > .githooks/pre-commit'), attempt('project', 'echo ok > made.txt')].join('; '), who.uid);
    t.match(missing.out, 'NOT create-hook', missing.out);
    t.match(missing.out, 'DID project');
    t.notOk(existsSync(join(w.project, '.githooks')), 'the placeholder is gone again');
    mkdirSync(join(w.project, '.githooks'));
    writeFileSync(join(w.project, '.githooks', 'pre-commit'), '#!/bin/sh\necho mine\n');
    const existing = inside(w, [attempt('write-hook', 'echo "touch $HOME/PWNED" >> .githooks/pre-commit'), attempt('move-hooks', 'mv .githooks old && mkdir .githooks')].join('; '), who.uid);
    t.match(existing.out, 'NOT write-hook');
    t.match(existing.out, 'NOT move-hooks');
    t.equal(readFileSync(join(w.project, '.githooks', 'pre-commit'), 'utf8'), '#!/bin/sh\necho mine\n');
  });

  t.test(`${who.name}: host configs below the top are read-only, and their folders cannot be moved aside`, async (t) => {
    const w = world(t, who.uid);
    mkdirSync(join(w.project, 'sub', '.claude'), { recursive: true });
    writeFileSync(join(w.project, 'sub', '.claude', 'settings.json'), '{}');
    mkdirSync(join(w.project, 'pkg', 'a', '.vscode'), { recursive: true });
    writeFileSync(join(w.project, 'pkg', 'a', '.vscode', 'tasks.json'), '{}');
    writeFileSync(join(w.project, 'pkg', '.mcp.json'), '{}');
    mkdirSync(join(w.project, '.gemini'));
    mkdirSync(join(w.project, 'node_modules', 'x', '.vscode'), { recursive: true });
    const { out } = inside(
      w,
      [
        attempt('sub-claude', 'echo "{\\"hooks\\":1}" > sub/.claude/settings.json'),
        attempt('pkg-vscode', 'echo x > pkg/a/.vscode/tasks.json'),
        attempt('pkg-mcp', 'echo x > pkg/.mcp.json'),
        attempt('gemini', 'echo x > .gemini/settings.json'),
        attempt('move-sub', 'mv sub sub2 && mkdir -p sub/.claude && echo x > sub/.claude/settings.json'),
        attempt('move-pkg', 'mv pkg pkg2'),
        attempt('sub-other', 'echo ok > sub/notes.txt'),
        attempt('skipped-folder', 'echo x > node_modules/x/.vscode/tasks.json'),
      ].join('; '),
      who.uid,
    );
    for (const what of ['sub-claude', 'pkg-vscode', 'pkg-mcp', 'gemini', 'move-sub', 'move-pkg']) t.match(out, `NOT ${what}`, `${what}: ${out}`);
    t.match(out, 'DID sub-other', 'the folder holding one stays writable');
    t.match(out, 'DID skipped-folder', 'a folder the scan skips (node_modules) is not looked into');
    t.equal(readFileSync(join(w.project, 'sub', '.claude', 'settings.json'), 'utf8'), '{}');
  });

  t.test(`${who.name}: a protected path that is a link protects what it leads to inside the project`, async (t) => {
    const w = world(t, who.uid);
    mkdirSync(join(w.project, 'tools', 'claude-config'), { recursive: true });
    writeFileSync(join(w.project, 'tools', 'claude-config', 'settings.json'), '{}');
    symlinkSync('tools/claude-config', join(w.project, '.claude'));
    const { out } = inside(
      w,
      [
        attempt('through-link', 'echo x > .claude/settings.json'),
        attempt('target', 'echo x > tools/claude-config/settings.json'),
        attempt('move-tools', 'mv tools tools2'),
        attempt('beside', 'echo ok > tools/other.txt'),
      ].join('; '),
      who.uid,
    );
    t.match(out, 'NOT through-link');
    t.match(out, 'NOT target');
    t.match(out, 'NOT move-tools');
    t.match(out, 'DID beside');
    t.equal(readFileSync(join(w.project, 'tools', 'claude-config', 'settings.json'), 'utf8'), '{}');
  });

  t.test(`${who.name}: a nested repository or host config a command creates is listed once it has ended`, async (t) => {
    const w = world(t, who.uid);
    mkdirSync(join(w.project, 'sub', '.vscode'), { recursive: true });
    const r = inside(w, 'mkdir -p pkg/.claude && echo "{}" > pkg/.claude/settings.json; mkdir -p newrepo/.git/hooks && echo x > newrepo/.git/config; echo ok > plain.txt; echo x > app.mcp.json; echo done', who.uid);
    t.same(r.created.sort(), ['newrepo/.git', 'pkg/.claude'], 'exactly the new protected paths, not ordinary files nor what existed before');
  });

  t.test(`${who.name}: a repository made beyond the check's depth is not missed silently: the list says the check was incomplete`, async (t) => {
    const w = world(t, who.uid);
    const deep = 'a/b/c/d/e/f/g/h/i/j';
    const r = inside(w, `mkdir -p ${deep}/.git && echo x > ${deep}/.git/config; echo done`, who.uid);
    t.ok(r.created.includes(SCAN_INCOMPLETE), 'the scan after the process stopped at its limit, and says so');
    const event = protectedCreatedEvent(r.created);
    t.equal(event?.incomplete, true);
    t.match(event?.notice, /may not be listed/, 'in words the user sees');
    t.notMatch(event?.notice ?? '', /\u0000/, 'the marker itself is never shown');
  });
}

t.test('an approved command that creates a nested repository and a host config: a WARNING event and an audit row name them', async (t) => {
  let model: Scripted | undefined;
  const b = await agentBench(() => model as Scripted);
  t.teardown(() => b.close());
  model = scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['sh', '-c', 'git init -q vendored && mkdir -p pkg/.claude && echo "{}" > pkg/.claude/settings.json && echo ok > plain.txt'] } }] }, { calls: [{ name: 'finish', arguments: { summary: 'ran' } }] }]);
  const job = b.submit('set up');
  const db = b.engine.db();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1, 30000);
  decideAsCli({ policy: b.engine.policy, db }, pendingApprovals(db, { project: b.sb.project, jobId: job.id })[0]!.id, 'approved');
  b.engine.jobs().sync();
  await b.settle(job.id, 60000);
  const warned = b.events(job.id).filter((e) => e.kind === 'protected_created');
  t.equal(warned.length, 1, 'one warning');
  t.same(warned[0]!.body.paths, ['pkg/.claude', 'vendored/.git']);
  t.match(warned[0]!.body.notice, /git or a coding host may load and run later: pkg\/\.claude, vendored\/\.git/);
  const rows = readAudit(db, { kinds: ['protected_created'], limit: 10 }).map((r) => r.body as Record<string, unknown>);
  t.match(rows, [{ kind: 'command', project: b.sb.project, paths: ['pkg/.claude', 'vendored/.git'] }]);
  t.equal(rows.length, 1);
});
