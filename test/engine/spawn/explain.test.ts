// Failures explain themselves: a sandboxed command that fails on a path the sandbox hid or showed
// read-only is told so in words, with the path and the exact `sandbox allow` that would show it,
// in the job's result, the terminal, --json, the events an MCP client reads, and what the model
// gets back from run_command; and one that wrote into its private home or /tmp is told those
// files were discarded. With a real bwrap, as the user running the suite (and, run as root, the
// report as an ordinary user too).
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { connection, cli, type Sandbox, sandbox, SHARED_TMP } from '../../fixtures/env.js';
import { approvedCommand, isRoot, NOBODY } from '../../fixtures/sandboxed.js';
import { bwrapBuilder } from '../../../src/engine/spawn/builder.js';
import { explainFailure } from '../../../src/engine/spawn/explain.js';
import { confinedCommand, sandboxSupport } from '../../../src/engine/spawn/index.js';
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
