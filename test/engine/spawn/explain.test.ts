// Failures explain themselves: a sandboxed command that fails on a path the sandbox hid or showed
// read-only is told so in words, with the path and the exact `sandbox allow` that would show it,
// in the job's result, the terminal, --json, the events an MCP client reads, and what the model
// gets back from run_command; and one that wrote into its private home or /tmp is told those
// files were discarded. With a real bwrap, as the user running the suite (and, run as root, the
// report as an ordinary user too).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { connection, cli, type Sandbox, sandbox, SHARED_TMP } from '../../fixtures/env.js';
import { approvedCommand, isRoot, NOBODY } from '../../fixtures/sandboxed.js';
import { cacheRoot } from '../../../src/engine/spawn/caches.js';
import { bwrapBuilder } from '../../../src/engine/spawn/builder.js';
import { readDiscarded, reportFile } from '../../../src/engine/spawn/discarded.js';
import { explainFailure } from '../../../src/engine/spawn/explain.js';
import { confinedCommand, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { sandboxArgv } from '../../../src/engine/spawn/sandbox.js';
import { shippedPolicy } from '../../../src/policy/load.js';

const ws = (sb: Sandbox) => ['--workspace', sb.project];

async function trusted(): Promise<Sandbox> {
  const sb = sandbox('sc-explain');
  t.equal((await cli(sb, [...ws(sb), 'trust'])).code, 0);
  return sb;
}

const testJson = async (sb: Sandbox, argv: string[]) => {
  const r = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', ...argv]);
  return { code: r.code, data: JSON.parse(r.stdout) as Record<string, any> };
};

t.test('a folder outside the toolchains stays unreadable; the failure names the sandbox and the fix, which works', async (t) => {
  const sb = await trusted();
  const data = join(sb.root, 'data');
  mkdirSync(data);
  writeFileSync(join(data, 'rows.csv'), 'a,b\n');
  const r = await testJson(sb, ['sh', '-c', `cat ${data}/rows.csv`]);
  t.equal(r.code, 1);
  t.equal(r.data.passed, false);
  t.match(r.data.output_tail, /No such file or directory/, 'the folder is not there inside');
  t.same(r.data.sandbox_blocked, [{
    path: join(data, 'rows.csv'), kind: 'hidden', error: 'ENOENT',
    message: `the sandbox hid ${join(data, 'rows.csv')}: your home is an empty private folder inside the sandbox; to show ${data} to sandboxed commands of this project, grant it`,
    fix: `shadowcode --project ${sb.project} sandbox allow ${data}`,
  }]);
  const text = await cli(sb, [...ws(sb), 'test', '--yes', '--', 'sh', '-c', `cat ${data}/rows.csv`]);
  t.match(text.stdout, `it ran in the sandbox, which is why it failed here:\nsandbox: the sandbox hid ${join(data, 'rows.csv')}`);
  t.match(text.stdout, `grant it: shadowcode --project ${sb.project} sandbox allow ${data}`);
  // The fix, exactly as given (less the program's name): now it reads.
  const fix = (r.data.sandbox_blocked[0].fix as string).split(' ').slice(1);
  t.equal((await cli(sb, fix)).code, 0);
  const again = await testJson(sb, ['sh', '-c', `cat ${data}/rows.csv`]);
  t.equal(again.data.passed, true, again.data.output_tail);
  t.equal(again.data.sandbox_blocked, undefined);
  // Writing there is another matter: read-only, and the fix says --write.
  const ro = await testJson(sb, ['sh', '-c', `echo x > ${data}/out.csv`]);
  t.match(ro.data.sandbox_blocked, [{ path: join(data, 'out.csv'), kind: 'read_only', error: 'EROFS', fix: `shadowcode --project ${sb.project} sandbox allow ${data} --write` }]);
});

t.test('a protected path, a secret path and a failure of its own: each said as it is', async (t) => {
  const sb = await trusted();
  mkdirSync(join(sb.root, '.ssh'));
  writeFileSync(join(sb.root, '.ssh', 'id_ed25519'), 'KEY');
  const r = await testJson(sb, ['sh', '-c', `touch .git/hooks-x; cat ${sb.root}/.ssh/id_ed25519; cat /nonexistent-${process.pid}; exit 1`]);
  t.match(r.data.sandbox_blocked, [
    { path: join(sb.project, '.git/hooks-x'), kind: 'protected', error: 'EROFS', fix: null },
    { path: join(sb.root, '.ssh/id_ed25519'), kind: 'secret', error: 'ENOENT', fix: `shadowcode --project ${sb.project} sandbox allow ${join(sb.root, '.ssh/id_ed25519')} --secret` },
  ]);
  t.equal(r.data.sandbox_blocked.length, 2, 'a path missing outside too is not the sandbox');
  const own = await testJson(sb, ['sh', '-c', `cat /nonexistent-${process.pid}`]);
  t.equal(own.data.sandbox_blocked, undefined, 'nothing said when the sandbox is not why');
});

t.test("a command found on the user's PATH only in a folder the sandbox never shows whole (the home itself): 127, named with the fix", async () => {
  const home = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-explain-home-')));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  writeFileSync(join(home, 'mytool'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  const line = ['bwrap', '--tmpfs', home, '--ro-bind', '/usr', '/usr', '--', 'sh', '-c', 'mytool'];
  const blocks = explainFailure(bwrapBuilder.mounts(line), 'sh: 1: mytool: not found\n', 127, {
    project: '/work/app', profileDir: null, home, path: `${home}:/usr/bin`, hidden: [], systemReadOnly: ['/usr'],
  });
  t.match(blocks, [{ path: join(home, 'mytool'), kind: 'hidden', error: 'not_found', fix: `shadowcode --project /work/app sandbox allow ${join(home, 'mytool')}` }]);
  t.same(explainFailure(bwrapBuilder.mounts(line), 'sh: 1: mytool: not found\n', 0, { project: null, profileDir: null, home, path: home, hidden: [], systemReadOnly: [] }), [], 'nothing for a success');
});

t.test("what a command writes in its private home and /tmp is named as discarded: in the job's result and the model's", async (t) => {
  const sb = await trusted();
  const r = await testJson(sb, ['sh', '-c', `echo x > ${sb.root}/memory.jsonl; mkdir -p /tmp/w; echo y > /tmp/w/out.txt; echo done`]);
  t.equal(r.data.passed, true);
  t.same(r.data.discarded, { count: 2, paths: [join(sb.root, 'memory.jsonl'), '/tmp/w/out.txt'], more: false });
  const text = await cli(sb, [...ws(sb), 'test', '--yes', '--', 'sh', '-c', `echo x > ${sb.root}/kept.txt`]);
  t.match(text.stdout, `note: The command wrote 1 file in its private home or /tmp, which the sandbox discarded when it ended: ${join(sb.root, 'kept.txt')}: write such files in the project, or grant their folder`);
  const clean = await testJson(sb, ['sh', '-c', 'echo x > out.txt']);
  t.equal(clean.data.discarded, undefined, 'the project keeps what is written there: nothing to say');

  // What the model gets back from run_command, for a failure and for a discarded file.
  const data = join(sb.root, 'notes');
  const { result, b } = await approvedCommand(t, (b) => `mkdir -p ${join(b.sb.root, 'notes')} 2>/dev/null; echo x > ~/scratch.txt; cat ${join(b.sb.root, 'notes')}/n.txt`, {
    setup: (b) => {
      mkdirSync(join(b.sb.root, 'notes'), { recursive: true });
      writeFileSync(join(b.sb.root, 'notes', 'n.txt'), 'n');
    },
  });
  void data;
  t.match(result, '--- sandbox ---\nIt ran in a sandbox, which is why it failed here; the user can change that:');
  t.match(result, `sandbox allow ${join(b.sb.root, 'notes')}`);
  t.match(result, `The command wrote 1 file in its private home or /tmp, which the sandbox discarded when it ended: ${join(b.sb.root, 'scratch.txt')}`);
});

t.test('shadow_test: the test job carries the explanation as events an MCP client reads', async (t) => {
  const sb = await trusted();
  const data = join(sb.root, 'inputs');
  mkdirSync(data);
  writeFileSync(join(data, 'a.txt'), 'a');
  const c = await connection(sb, { allowWrite: true, allowApprovals: true });
  t.teardown(() => c.close());
  const sub = await c.call('shadow_test', { command: ['sh', '-c', `cat ${data}/a.txt`] });
  t.equal(sub.isError, false, sub.text);
  const ok = await c.call('shadow_approve', { approval_id: sub.data.approval.id, decision: 'approve' });
  t.equal(ok.isError, false, ok.text);
  let events: Array<{ kind: string; body: any }> = [];
  for (let i = 0; i < 600; i++) {
    events = (await c.call('shadow_jobs', { action: 'events', job_id: sub.data.job_id, limit: 100 })).data.events;
    if (events.some((e) => e.kind === 'exit')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const exit = events.find((e) => e.kind === 'exit');
  t.match(exit?.body.sandbox_blocked, [{ path: join(data, 'a.txt'), kind: 'hidden', fix: `shadowcode --project ${sb.project} sandbox allow ${data}` }]);
  t.match(events.find((e) => e.kind === 'sandbox_blocked')?.body.notice, `sandbox: the sandbox hid ${join(data, 'a.txt')}`);
});

if (isRoot) {
  t.test('as an ordinary user (uid 65534, started by root): the report of what it left behind is theirs and read back', async (t) => {
    const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-explain-user-')));
    chmodSync(root, 0o755);
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    const home = join(root, 'home');
    const project = join(home, 'app');
    const profile = join(home, '.shadowcode');
    for (const d of [home, project, profile]) {
      mkdirSync(d, { recursive: true });
      chownSync(d, NOBODY, NOBODY);
    }
    const bwrap = sandboxSupport().bwrap as string;
    const c = confinedCommand({ argv: ['sh', '-c', 'echo x > ~/notes.txt; id -u'], cwd: project, env: { PATH: '/usr/bin:/bin', HOME: home, TMPDIR: root }, confine: { project, network: false }, trustedArgv: false, policy: shippedPolicy() }, bwrap, profile, NOBODY, { grants: { paths: [], hosts: [], skipped: [] }, report: true });
    const child = spawn(c.argv[0] as string, c.argv.slice(1), { cwd: project, env: c.env, uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    c.release();
    t.equal(code, 0, out);
    t.match(out, new RegExp(`^${NOBODY}$`, 'm'));
    t.same(c.discarded(), { count: 1, paths: [join(home, 'notes.txt')], more: false });
    t.equal(c.discarded(), null, 'read once, then gone');
  });
}

// The report shell looks at the private home and /tmp itself and starts find only when something
// is there: a `find` of our own first on PATH counts its starts, then runs the real one.
for (const uid of isRoot ? [0, NOBODY] : [process.getuid?.() as number]) {
  t.test(`as uid ${uid}: a command that leaves nothing starts no find; one that leaves a file, a link or a folder of its own does, and each file is named`, async (t) => {
    const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-explain-look-')));
    chmodSync(root, 0o755);
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    const home = join(root, 'home');
    const project = join(home, 'app');
    const profile = join(home, '.shadowcode');
    const tools = join(root, 'tools');
    for (const d of [home, project, profile, tools]) mkdirSync(d, { recursive: true });
    const ran = join(project, 'find-ran');
    writeFileSync(join(tools, 'find'), `#!/bin/sh\necho run >> ${ran}\nexec /usr/bin/find "$@"\n`, { mode: 0o755 });
    if (uid !== process.getuid?.()) for (const d of [home, project, profile]) chownSync(d, uid, uid);
    const bwrap = sandboxSupport().bwrap as string;
    const run = async (script: string) => {
      rmSync(ran, { force: true });
      const c = confinedCommand({ argv: ['sh', '-c', script], cwd: project, env: { PATH: `${tools}:/usr/bin:/bin`, HOME: home, TMPDIR: root }, confine: { project, network: false }, trustedArgv: false, policy: shippedPolicy() }, bwrap, profile, uid, { grants: { paths: [], hosts: [], skipped: [] }, report: true });
      const child = spawn(c.argv[0] as string, c.argv.slice(1), { cwd: project, env: c.env, uid, gid: uid, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      c.release();
      t.equal(code, 0, out);
      let finds = 0;
      try {
        finds = (await import('node:fs')).readFileSync(ran, 'utf8').split('\n').filter(Boolean).length;
      } catch {
        /* never ran */
      }
      return { finds, discarded: c.discarded() };
    };
    t.same(await run('true'), { finds: 0, discarded: null }, 'nothing left: no find, nothing to say');
    t.same(await run('echo x > ~/notes.txt; echo y > /tmp/out.txt'), { finds: 1, discarded: { count: 2, paths: [join(home, 'notes.txt'), '/tmp/out.txt'], more: false } });
    t.same(await run('mkdir -p ~/work/a/b && echo z > ~/work/a/b/f'), { finds: 1, discarded: { count: 1, paths: [join(home, 'work/a/b/f')], more: false } }, 'deep in a folder of its own');
    // A cache's mount point cannot be moved, but the folder above it can: renamed aside, and a
    // folder of the command's own made at the mount point's path, it is looked into all the same.
    t.same(await run('cd ~ && mv .cache .moved && mkdir -p .cache/pip && echo z > .cache/pip/hidden'), { finds: 1, discarded: { count: 1, paths: [join(home, '.cache/pip/hidden')], more: false } }, 'a mount point replaced under a renamed folder');
    t.same(await run('echo kept > ~/.cache/pip/wheel'), { finds: 0, discarded: null }, "in the project's private pip cache, which is kept: not looked into");
    t.equal(readFileSync(join(cacheRoot(project, { HOME: home }) as string, 'pip', 'wheel'), 'utf8'), 'kept\n', "written through the cache's link into the project's private cache, on the host");
    t.same(await run('ln -s /nowhere /tmp/link'), { finds: 1, discarded: { count: 1, paths: ['/tmp/link'], more: false } });
    t.same(await run('mkdir /tmp/empty'), { finds: 1, discarded: null }, 'a folder of its own is looked into; an empty one is nothing to say');
    // A private cache is a link into the project's caches folder, and a link, unlike a mount point,
    // can be removed: one replaced by a folder of the command's own is looked into; one left as it
    // was (every start above) is not; one pointed elsewhere makes find run.
    const npm = join(home, '.npm');
    t.same(await run('[ -L ~/.npm ] && rm ~/.npm && mkdir ~/.npm && echo x > ~/.npm/f'), { finds: 1, discarded: { count: 1, paths: [join(npm, 'f')], more: false } }, "a cache's link replaced by a folder of its own");
    t.same(await run('rm ~/.cache/pip && ln -s /tmp ~/.cache/pip'), { finds: 1, discarded: null }, 'a link pointed elsewhere: looked into, nothing of its own left');
  });
}

// A toolchain folder is bound with --ro-bind-try: where its source is gone from the host (removed
// since the view was found), bwrap makes no mount point. A path in the private home that bwrap did
// not mount is the command's own to make, and what it leaves there is named like anything else.
for (const uid of isRoot ? [0, NOBODY] : [process.getuid?.() as number]) {
  t.test(`as uid ${uid}: a toolchain folder in the home that is gone from the host is no mount point: what the command makes at its path is named as discarded`, async (t) => {
    const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'sc-explain-try-')));
    chmodSync(root, 0o755);
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    const home = join(root, 'home');
    const project = join(home, 'app');
    const cargo = join(home, '.cargo', 'bin');
    for (const d of [project, cargo]) mkdirSync(d, { recursive: true });
    writeFileSync(join(cargo, 'tool'), '#!/bin/sh\necho tool\n', { mode: 0o755 });
    if (uid !== process.getuid?.()) for (const d of [home, project]) chownSync(d, uid, uid);
    const bwrap = sandboxSupport().bwrap as string;
    const policy = shippedPolicy();
    const env = { HOME: home, PATH: `${cargo}:/usr/bin:/bin` };
    const run = (script: string) => {
      const rep = reportFile(root, uid);
      t.teardown(rep.remove);
      // The view as it was found before ~/.pyenv was removed: both folders, read-only.
      const line = sandboxArgv({
        argv: ['sh', '-c', script], cwd: project, env, bwrap, trusted: false, unset: [], stateLimits: policy.limits.runners,
        project, network: false, profileDir: null, policy: policy.sandbox, tools: { read: [join(home, '.pyenv'), cargo], links: [], layouts: ['pyenv', 'cargo'] },
        report: { file: rep.file, entries: policy.limits.sandbox.discarded_entries },
      });
      const r = spawnSync(line[0] as string, line.slice(1), { encoding: 'utf8', env, uid, gid: uid });
      t.equal(r.status, 0, r.stderr);
      const mounted = bwrapBuilder.mounts(line).map((m) => m.at);
      return { out: r.stdout, mounted, discarded: readDiscarded(rep.file, home, mounted, policy.limits.sandbox.discarded_entries) };
    };
    const made = run('mkdir -p ~/.pyenv/versions && echo x > ~/.pyenv/versions/planted && tool');
    t.match(made.out, 'tool', 'the toolchain still there is shown');
    t.notOk(made.mounted.includes(join(home, '.pyenv')), 'no mount is claimed where bwrap made none');
    t.same(made.discarded, { count: 1, paths: [join(home, '.pyenv/versions/planted')], more: false });
    const file = run('echo x > ~/.pyenv');
    t.same(file.discarded, { count: 1, paths: [join(home, '.pyenv')], more: false }, 'a file at that very path too');
    t.same(run('tool').discarded, null, 'the folder that is mounted is skipped as before');
  });
}
