// The file-change API, checkpoints, history, review and rollback, through the
// tools a client uses; and a crash in the middle of a change.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Engine } from '../../src/engine/engine.js';
import { changeFile } from '../../src/engine/files.js';
import { enforce } from '../../src/policy/gate.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { getProject } from '../../src/store/projects.js';
import { sha256 } from '../../src/util/canonical-json.js';
import { cli, connection, ROOT, sandbox, TS_REQUIRE } from '../fixtures/env.js';

/** A task that changes files, as the agent runtime will: through the gate, then the file API. */
async function task(c: Awaited<ReturnType<typeof connection>>, project: string, edits: Array<[string, string | null]>, why = 'edit') {
  const { job } = c.engine.jobs().submitTest(c.conn.owner, project, ['true'], 'workspace', null);
  const p = getProject(c.engine.db(), project);
  for (const [path, content] of edits) {
    await enforce(
      c.conn.gate(),
      { action: 'file:write', principal: { kind: 'engine', owner: c.conn.owner, allow_write: true, allow_approvals: false }, project: { path: p.path, trusted: p.trusted, level: p.level }, requested_level: 'workspace', resource: { kind: 'job', id: job.id, owner: c.conn.owner, project } },
      (tk) => changeFile(tk, c.engine.db(), project, job.id, path, content === null ? null : Buffer.from(content), why, 1 << 20),
    );
  }
  await c.engine.jobs().cancel(job.id);
  return job.id;
}

async function setup(t: any) {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await connection(sb, { allowWrite: true });
  t.teardown(() => c.engine.shutdown());
  return { sb, c };
}

t.test('a task\'s changes are checkpointed, explained, reviewable, and rolled back', async (t) => {
  const { sb, c } = await setup(t);
  writeFileSync(join(sb.project, 'a.txt'), 'one\ntwo\nthree\n');
  chmodSync(join(sb.project, 'a.txt'), 0o640);
  writeFileSync(join(sb.project, 'gone.txt'), 'delete me\n');
  const id = await task(c, sb.project, [['a.txt', 'one\nTWO\nthree\n'], ['new.txt', 'fresh\n'], ['a.txt', 'one\nTWO\nthree\nfour\n'], ['gone.txt', null]], 'fix two');
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'one\nTWO\nthree\nfour\n');
  t.equal(statSync(join(sb.project, 'a.txt')).mode & 0o777, 0o640, 'the mode is kept');

  const cps = (await c.call('shadow_checkpoint', { task_id: id })).data.checkpoints;
  t.same(cps.map((x: any) => [x.path, x.existed]), [['a.txt', true], ['gone.txt', true], ['new.txt', false]], 'one checkpoint per file, taken before the first change');
  const a = (await c.call('shadow_checkpoint', { checkpoint_id: cps[0].id })).data;
  t.match(a, { path: 'a.txt', existed: true, mode: '640', preview: 'one\ntwo\nthree\n', sha256: sha256('one\ntwo\nthree\n') });

  const why = (await c.call('shadow_why', { path: 'a.txt' })).data.changes;
  t.equal(why.length, 2);
  t.match(why[0], { task_id: id, kind: 'write', why: 'fix two' });

  const review = (await c.call('shadow_review', { task_id: id })).data;
  const byPath = Object.fromEntries(review.files.map((f: any) => [f.path, f]));
  t.equal(byPath['new.txt'].status, 'added');
  t.equal(byPath['gone.txt'].status, 'deleted');
  t.match(byPath['a.txt'].diff, /--- a\/a.txt\n\+\+\+ b\/a.txt\n@@ -1,3 \+1,4 @@\n one\n-two\n\+TWO\n three\n\+four\n/);

  t.match((await c.call('shadow_rollback', { task_id: id })).text, /must have required property 'confirm'/, 'confirm: true is required');
  const rb = (await c.call('shadow_rollback', { task_id: id, confirm: true })).data;
  t.same(rb.restored.sort(), ['a.txt', 'gone.txt', 'new.txt']);
  t.equal(readFileSync(join(sb.project, 'a.txt'), 'utf8'), 'one\ntwo\nthree\n');
  t.equal(statSync(join(sb.project, 'a.txt')).mode & 0o777, 0o640);
  t.equal(readFileSync(join(sb.project, 'gone.txt'), 'utf8'), 'delete me\n');
  t.notOk(existsSync(join(sb.project, 'new.txt')), 'a file the task created is removed');
  t.match((await c.call('shadow_why', { path: 'a.txt' })).data.changes[0], { kind: 'rollback', task_id: id }, 'the rollback is itself recorded');
  t.equal((await c.call('shadow_review', { task_id: id })).data.rolled_back, true);
});

t.test('a file changed since the task stops the whole rollback and is named', async (t) => {
  const { sb, c } = await setup(t);
  writeFileSync(join(sb.project, 'x.txt'), 'x0\n');
  writeFileSync(join(sb.project, 'y.txt'), 'y0\n');
  const id = await task(c, sb.project, [['x.txt', 'x1\n'], ['y.txt', 'y1\n']]);
  writeFileSync(join(sb.project, 'y.txt'), 'someone else\n');
  const r = await c.call('shadow_rollback', { task_id: id, confirm: true });
  t.equal(r.data.error.code, 'SC_ROLLBACK_CONFLICT');
  t.same(r.data.error.detail.files, ['y.txt']);
  t.equal(readFileSync(join(sb.project, 'x.txt'), 'utf8'), 'x1\n', 'all or nothing: the file without a conflict is untouched too');
  t.equal(readFileSync(join(sb.project, 'y.txt'), 'utf8'), 'someone else\n');
});

t.test('a file or folder of the task swapped for a link out of the project: review names it without following, rollback refuses and touches nothing', async (t) => {
  const { sb, c } = await setup(t);
  mkdirSync(join(sb.project, 'dir'));
  writeFileSync(join(sb.project, 'dir', 'a.txt'), 'a0\n');
  writeFileSync(join(sb.project, 'b.txt'), 'b0\n');
  writeFileSync(join(sb.project, 'c.txt'), 'c0\n');
  const id = await task(c, sb.project, [['dir/a.txt', 'a1\n'], ['b.txt', 'b1\n'], ['c.txt', 'c1\n']]);
  // What a command of the task could do next: outside files holding what the task left, links to them in its place.
  const out = join(sb.root, 'outside');
  mkdirSync(out);
  writeFileSync(join(out, 'a.txt'), 'a1\n');
  writeFileSync(join(out, 'secret'), 'b1\n');
  rmSync(join(sb.project, 'dir'), { recursive: true });
  symlinkSync(out, join(sb.project, 'dir'));
  rmSync(join(sb.project, 'b.txt'));
  symlinkSync(join(out, 'secret'), join(sb.project, 'b.txt'));
  const review = (await c.call('shadow_review', { task_id: id })).data;
  t.strictSame(review.files, [
    { path: 'dir/a.txt', status: 'modified', diff: '--- a/dir/a.txt\n+++ b/dir/a.txt\n@@ a folder above it is now a link that leaves the project: not followed @@\n' },
    { path: 'b.txt', status: 'modified', diff: '--- a/b.txt\n+++ b/b.txt\n@@ it is now a symbolic link: not followed @@\n' },
    { path: 'c.txt', status: 'modified', diff: '--- a/c.txt\n+++ b/c.txt\n@@ -1,1 +1,1 @@\n-c0\n+c1\n' },
  ], 'every file reviewed; the linked ones named, not read');
  const r = await c.call('shadow_rollback', { task_id: id, confirm: true });
  t.equal(r.data.error.code, 'SC_ROLLBACK_CONFLICT');
  t.same(r.data.error.detail.files.sort(), ['b.txt', 'dir/a.txt']);
  t.equal(readFileSync(join(out, 'a.txt'), 'utf8'), 'a1\n', 'nothing written through the folder link');
  t.equal(readFileSync(join(out, 'secret'), 'utf8'), 'b1\n', 'nothing written through the file link');
  t.ok(lstatSync(join(sb.project, 'b.txt')).isSymbolicLink());
  t.equal(readFileSync(join(sb.project, 'c.txt'), 'utf8'), 'c1\n', 'all or nothing');
});

t.test('rollback needs write access and an exact task of this project', async (t) => {
  const { sb, c } = await setup(t);
  writeFileSync(join(sb.project, 'x.txt'), 'x0\n');
  const id = await task(c, sb.project, [['x.txt', 'x1\n']]);
  const ro = await connection(sb);
  t.teardown(() => ro.engine.shutdown());
  t.match((await ro.call('shadow_rollback', { task_id: id, confirm: true })).text, /denied by write-needs-flag/);
  t.equal((await c.call('shadow_rollback', { task_id: id.slice(0, -1), confirm: true })).data.error.code, 'SC_TASK_NOT_FOUND');
});

t.test('writes stay inside the project by real path', async (t) => {
  const { sb, c } = await setup(t);
  symlinkSync(sb.root, join(sb.project, 'escape'));
  await t.rejects(task(c, sb.project, [['../outside.txt', 'x']]), { code: 'SC_PATH_OUTSIDE' });
  await t.rejects(task(c, sb.project, [['escape/outside.txt', 'x']]), { code: 'SC_PATH_OUTSIDE' });
  t.notOk(existsSync(join(sb.root, 'outside.txt')));
});

t.test('file changes need a trusted project at the workspace level', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'read_only']);
  const c = await connection(sb, { allowWrite: true });
  t.teardown(() => c.engine.shutdown());
  await t.rejects(task(c, sb.project, [['a.txt', 'x']]), { code: 'SC_POLICY_DENIED', message: /engine-needs-workspace-level/ });
});

t.test('a crash in the middle of a change leaves the store consistent', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const script = `
    const { Engine } = require('./src/engine/engine.ts');
    const { changeFile } = require('./src/engine/files.ts');
    const { enforce } = require('./src/policy/gate.ts');
    const { shippedPolicy } = require('./src/policy/load.ts');
    const { Connection } = require('./src/server/connection.ts');
    const sb = JSON.parse(process.argv[1]);
    // What connection() in test/fixtures/env.ts builds, without loading the whole CLI each round.
    const engine = new Engine(sb.profile, shippedPolicy(), sb.env);
    const c = { engine, conn: new Connection({ transport: 'stdio', project: sb.project, allowWrite: true, allowApprovals: false, engine }) };
    const { job } = c.engine.jobs().submitTest(c.conn.owner, sb.project, ['true'], 'workspace', null);
    const big = Buffer.alloc(8 << 20, 97);
    process.stdout.write('ready\\n');
    (async () => {
      for (let i = 0; ; i++) {
        await enforce(c.conn.gate(), { action: 'file:write', principal: { kind: 'engine', owner: c.conn.owner, allow_write: true, allow_approvals: false }, project: { path: sb.project, trusted: true, level: 'workspace' }, requested_level: 'workspace', resource: { kind: 'job', id: job.id, owner: c.conn.owner, project: sb.project } },
          (tk) => changeFile(tk, c.engine.db(), sb.project, job.id, 'f' + (i % 3) + '.bin', Buffer.concat([big, Buffer.from(String(i))]), 'loop ' + i, 16 << 20));
        process.stdout.write('applied\\n');
      }
    })();
  `;
  // A timed-out run must not leave an endless writer behind.
  let live: ReturnType<typeof spawn> | null = null;
  t.teardown(() => {
    live?.kill('SIGKILL');
  });
  for (let round = 0; round < 4; round++) {
    const child = spawn(process.execPath, [...TS_REQUIRE, '-e', script, JSON.stringify(sb)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    live = child;
    // Killed at a different point of a later change each round, once one change is through (however slow the machine).
    let out = '';
    await new Promise<void>((r) => child.stdout.on('data', (d) => (out += d).includes('applied') && r()));
    await new Promise((r) => setTimeout(r, round * 170));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    live = null;
  }
  const e = new Engine(sb.profile, shippedPolicy(), sb.env);
  t.teardown(() => e.shutdown());
  const db = e.db();
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  t.equal((db.prepare("SELECT count(*) AS n FROM changes WHERE state = 'pending'").get() as { n: number }).n, 0, 'no change is left pending');
  const applied = db.prepare("SELECT count(*) AS n FROM changes WHERE state = 'applied'").get() as { n: number };
  t.ok(applied.n > 0, 'some changes completed');
  for (const f of ['f0.bin', 'f1.bin', 'f2.bin']) {
    if (!existsSync(join(sb.project, f))) continue;
    const last = db.prepare("SELECT after_sha FROM changes WHERE path = ? AND state = 'applied' ORDER BY seq DESC LIMIT 1").get(f) as { after_sha: string } | undefined;
    t.equal(sha256(readFileSync(join(sb.project, f))), last?.after_sha, `${f} holds exactly its last recorded change`);
    const cp = db.prepare('SELECT count(*) AS n FROM checkpoints WHERE path = ?').get(f) as { n: number };
    t.ok(cp.n >= 1, `${f} has its checkpoint`);
  }
});
