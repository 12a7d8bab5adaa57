// The shared engine's socket protocol, over a real Unix socket to a real engine
// process: owner capacity with control access kept, refused submissions, queued
// cancellation behind unrelated work, unread replies, malformed frames,
// cross-project attempts and peers that are not this user.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { engineFiles } from '../../../src/engine/daemon/files.js';
import { openLink } from '../../../src/engine/daemon/remote.js';
import { getJob } from '../../../src/engine/jobs.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { openDb } from '../../../src/store/db.js';
import { alive, cli, pidsOf, recordPid, type Sandbox, sandbox, until } from '../../fixtures/env.js';
import { label, rawPeer, rawSocket, startEngine } from '../../fixtures/engine.js';
import { fields } from '../../fixtures/exact.js';

const policy = shippedPolicy();
const db = (sb: Sandbox) => openDb(sb.profile, 5000);
const testJob = (argv: string[]) => ({ kind: 'test', argv, ceiling: 'workspace', task_id: null });
const long = (file: string) => ['sh', '-c', `sleep 60 & ${recordPid('$!', file)}; ${recordPid('$$', file)}; wait`];

async function trusted(t: Test) {
  const sb = sandbox('eng');
  await cli(sb, ['--project', sb.project, 'trust']);
  const engine = await startEngine(t, sb);
  return { sb, engine };
}

async function approve(sb: Sandbox, approvalId: string) {
  const r = await cli(sb, ['--project', sb.project, 'approvals', 'approve', approvalId]);
  if (r.code !== 0) throw new Error(r.stderr);
}

t.test('a 9th ownership socket is refused while control requests still work, and a closed owner frees its place', async (t) => {
  const { sb } = await trusted(t);
  const owners = [];
  for (let i = 0; i < policy.limits.ownership.owners_per_profile; i++) {
    const p = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
    t.equal(p.ready.type, 'ready', `owner ${i + 1} is registered`);
    owners.push(p);
  }
  const ninth = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  t.match(ninth.ready, { type: 'error', code: 'SC_ENGINE_OWNERS_FULL', fatal: true });
  await ninth.closed;
  const control = await rawPeer(sb, 'control');
  t.equal(control.ready.type, 'ready', 'a control socket is still accepted');
  const status = await control.request({ type: 'status' });
  t.equal(status.data.owners.length, 8, 'status answers, listing the eight owners');

  const first = owners[0]!;
  t.match(await first.request({ type: 'close' }), { type: 'reply', data: { closed: true } });
  await first.closed;
  const again = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  t.equal(again.ready.type, 'ready', 'after a normal close another owner fits');
  for (const p of [...owners, again, control]) p.sock.destroy();
});

t.test('a refused submission is answered and the ownership socket stays usable', async (t) => {
  const sb = sandbox('eng');
  await startEngine(t, sb);
  const p = await rawPeer(sb, 'owner', { label: label(), transport: 'cli', project: sb.project });
  const refused = await p.request({ type: 'submit', project: sb.project, job: testJob(['true']) });
  t.match(refused, { type: 'error', code: 'SC_POLICY_DENIED', message: /engine-writing-work-needs-trust/, decision_id: /^[0-9a-f-]{36}$/ }, 'the refusal names its decision');
  t.notOk(refused.fatal, 'not fatal');
  // The CLI through the shared engine: the decision id crosses the socket into the error line.
  const viaCli = await cli(sb, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  t.match(viaCli.stderr, /engine-writing-work-needs-trust.*why: shadowcode policy explain --decision [0-9a-f-]{36} \[SC_POLICY_DENIED\]/);
  t.notOk(p.isClosed(), 'the socket is still open');
  await cli(sb, ['--project', sb.project, 'trust']);
  const ok = await p.request({ type: 'submit', project: sb.project, job: testJob(['true']) });
  t.match(ok, { type: 'reply', data: { job: { state: 'waiting_approval', project: sb.project }, approval: { kind: 'command' } } });
  const s = await p.request({ type: 'status' });
  t.equal(s.data.owners[0].jobs_accepted, 1, 'only the accepted submission is counted');
  p.sock.destroy();
});

t.test('a queued job is cancelled at once while unrelated work keeps the runners busy', async (t) => {
  const { sb } = await trusted(t);
  const a = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  const running = [];
  for (const n of [1, 2]) {
    const r = await a.request({ type: 'submit', project: sb.project, job: testJob(long(`pids-${n}`)) });
    await approve(sb, r.data.approval.id);
    running.push(r.data.job.id);
  }
  await until(() => pidsOf(join(sb.project, 'pids-1')).length === 2 && pidsOf(join(sb.project, 'pids-2')).length === 2);

  const b = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  const queued = await b.request({ type: 'submit', project: sb.project, job: testJob(['sh', '-c', 'echo ran > queued-ran']) });
  await approve(sb, queued.data.approval.id);
  const cancelled = await b.request({ type: 'cancel', job_id: queued.data.job.id });
  t.equal(cancelled.data.job.state, 'cancelled', 'the cancel is answered with the job cancelled');
  for (const id of running) t.equal(getJob(db(sb), id)?.state, 'running', 'the unrelated jobs are still running');

  // The same through end of input: the owner's queued job goes without waiting for the runners.
  const c = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  const q2 = await c.request({ type: 'submit', project: sb.project, job: testJob(['sh', '-c', 'echo ran > queued-ran-2']) });
  await approve(sb, q2.data.approval.id);
  c.sock.end();
  await until(() => getJob(db(sb), q2.data.job.id)?.state === 'cancelled');
  for (const id of running) t.equal(getJob(db(sb), id)?.state, 'running', 'still running when the EOF cancel lands');
  t.notOk(existsSync(join(sb.project, 'queued-ran')) || existsSync(join(sb.project, 'queued-ran-2')), 'neither queued job ran');

  const pids = [...pidsOf(join(sb.project, 'pids-1')), ...pidsOf(join(sb.project, 'pids-2'))];
  a.sock.destroy();
  await until(() => !pids.some(alive));
  b.sock.destroy();
});

t.test('a submission whose reply is never read still belongs to its owner and ends with the socket', async (t) => {
  const { sb } = await trusted(t);
  const me = label();
  const p = await rawPeer(sb, 'owner', { label: me, transport: 'stdio', project: sb.project });
  p.send({ type: 'submit', id: 1, project: sb.project, job: testJob(['sh', '-c', 'echo ran > unread-ran']) });
  p.sock.destroy();
  const d = db(sb);
  await until(() => (d.prepare('SELECT count(*) AS n FROM jobs WHERE owner = ?').get(me) as { n: number }).n === 1);
  const job = d.prepare('SELECT * FROM jobs WHERE owner = ?').get(me) as { id: string; state: string };
  await until(() => getJob(d, job.id)?.state === 'cancelled');
  const appr = d.prepare('SELECT state FROM approvals WHERE job_id = ?').get(job.id) as { state: string };
  t.equal(appr.state, 'cancelled', 'its approval can no longer be given');
  t.notOk(existsSync(join(sb.project, 'unread-ran')));
});

t.test('a malformed or out-of-order frame closes the socket and cancels what it owns', async (t) => {
  const { sb } = await trusted(t);
  for (const [what, bytes] of [
    ['not JSON', '{"type": "status", "id": 1\n'],
    ['an unknown frame type', '{"type":"launch","id":1}\n'],
    ['a second hello', `${JSON.stringify({ type: 'hello', version: 1, role: 'control', nonce: 'a'.repeat(64) })}\n`],
    ['a stop on an ownership socket', '{"type":"stop","id":1}\n'],
  ] as const) {
    const p = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
    const r = await p.request({ type: 'submit', project: sb.project, job: testJob(long('pids-m')) });
    await approve(sb, r.data.approval.id);
    await until(() => getJob(db(sb), r.data.job.id)?.state === 'running');
    p.sendRaw(bytes);
    const err = await p.next();
    t.match(err, { type: 'error', code: 'SC_ENGINE_PROTOCOL', fatal: true }, what);
    await p.closed;
    await until(() => getJob(db(sb), r.data.job.id)?.state === 'cancelled');
    t.pass(`${what}: the owner's running job is cancelled`);
  }
  const before = rawSocket(sb);
  before.sendRaw('\u0000\u0001garbage\n');
  t.match(await before.next(), { type: 'error', code: 'SC_ENGINE_PROTOCOL' }, 'garbage before the handshake is refused too');
  await before.closed;
  const pids = pidsOf(join(sb.project, 'pids-m'));
  await until(() => !pids.some(alive));
});

t.test('an ownership socket stays in its project', async (t) => {
  const { sb } = await trusted(t);
  const other = join(sb.root, 'other');
  mkdirSync(other);
  await cli(sb, ['--project', other, 'trust']);
  const victim = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: other });
  const theirs = await victim.request({ type: 'submit', project: other, job: testJob(['true']) });

  const p = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  const notMine = await p.request({ type: 'cancel', job_id: theirs.data.job.id });
  t.match(notMine, { type: 'error', code: 'SC_JOB_NOT_FOUND' }, "another owner's job in another project is not found");
  t.notOk(notMine.fatal);
  const cross = await p.request({ type: 'submit', project: other, job: testJob(['sh', '-c', 'echo x > crossed']) });
  t.match(cross, { type: 'error', code: 'SC_ENGINE_PROJECT_MISMATCH', fatal: true });
  await p.closed;
  const n = (db(sb).prepare('SELECT count(*) AS n FROM jobs WHERE project = ?').get(other) as { n: number }).n;
  t.equal(n, 1, 'no job was created in the other project');
  t.equal(getJob(db(sb), theirs.data.job.id)?.state, 'waiting_approval', "the other owner's job is untouched");

  symlinkSync(sb.project, join(sb.root, 'link'));
  const bad = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: join(sb.root, 'link') });
  t.match(bad.ready, { type: 'error', code: 'SC_ENGINE_PROTOCOL' }, 'an owner must name its project canonically');
  victim.sock.destroy();
});

t.test('peers that are not this user are refused', async (t) => {
  const { sb } = await trusted(t);
  const files = engineFiles(sb.profile);
  const gate = { policy, db: () => db(sb) };
  const who = { kind: 'cli' as const, owner: 'cli' };
  const root = process.getuid!() === 0;

  // A client refuses a socket another user owns, or that others may use. Root makes the
  // socket another user's; any other user finds one already: the root-owned `/` as the
  // directory the socket would be in.
  if (root) chownSync(files.sock, 65534, 65534);
  const foreign = root ? files : { ...files, sock: join('/', 'engine.sock') };
  await t.rejects(openLink(gate, foreign, 'control', who), { code: 'SC_ENGINE_PEER_REFUSED', message: /belongs to uid \d+, not to this user/ });
  if (root) chownSync(files.sock, process.getuid!(), process.getgid!());
  chmodSync(files.sock, 0o666);
  await t.rejects(openLink(gate, files, 'control', who), { code: 'SC_ENGINE_PEER_REFUSED', message: /mode 666/ });
  chmodSync(files.sock, 0o600);
  const ok = await openLink(gate, files, 'control', who);
  t.ok(ok.engine.pid, 'the private socket is accepted');
  ok.destroy();

  // Another user's process cannot reach the socket at all: only the profile directory (0700)
  // and the socket (0600) stand in its way.
  t.equal(statSync(sb.profile).mode & 0o777, 0o700, 'the profile directory is private');
  t.equal(statSync(files.sock).mode & 0o777, 0o600, 'the socket is private');
  if (root) {
    // The child is a script of its own in a world-readable folder, started through `env -i`
    // so none of the test runner's hooks (NODE_OPTIONS, added to every child's environment)
    // come along: uid 65534 may not be able to read this checkout.
    chmodSync(sb.root, 0o755);
    const dir = mkdtempSync('/tmp/sc-peer-'); // /tmp, not TMPDIR: TMPDIR may itself be private
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    chmodSync(dir, 0o755);
    const script = join(dir, 'connect.cjs');
    writeFileSync(script, `require('net').connect(${JSON.stringify(files.sock)}).on('error', (e) => { console.log(e.code); }).on('connect', () => { console.log('connected'); process.exit(0); });\n`, { mode: 0o644 });
    const r = spawnSync('env', ['-i', process.execPath, script], { uid: 65534, gid: 65534, encoding: 'utf8', cwd: dir });
    t.equal(r.stdout.trim(), 'EACCES', `a process of uid 65534 is refused by the kernel (stderr: ${r.stderr.trim() || 'none'})`);
  }

  // The engine refuses a client that cannot prove it holds the token.
  const p = rawSocket(sb);
  p.send({ type: 'hello', version: 1, role: 'control', nonce: 'b'.repeat(64) });
  const ch = await p.next();
  t.equal(ch.type, 'challenge');
  p.send({ type: 'auth', proof: 'c'.repeat(64) });
  t.match(await p.next(), { type: 'error', code: 'SC_ENGINE_PEER_REFUSED', fatal: true });
  await p.closed;
});

t.test('a detached job belongs to no socket and survives the client that submitted it', async (t) => {
  const { sb } = await trusted(t);
  const ctl = await rawPeer(sb, 'control');
  const r = await ctl.request({ type: 'detach', project: sb.project, job: testJob(long('pids-d')) });
  t.match(r, { type: 'reply', data: { job: { owner: /^detached:/, state: 'waiting_approval' } } });
  const owner = await rawPeer(sb, 'owner', { label: label(), transport: 'stdio', project: sb.project });
  t.match(await owner.request({ type: 'detach', project: sb.project, job: testJob(['true']) }), { type: 'error', code: 'SC_ENGINE_PROTOCOL', fatal: true }, 'an ownership socket cannot detach work');
  ctl.sock.destroy();
  await approve(sb, r.data.approval.id);
  await until(() => pidsOf(join(sb.project, 'pids-d')).length === 2);
  const st = await (await rawPeer(sb, 'control')).request({ type: 'status' });
  t.same(fields(st.data.jobs, ['id', 'state']), [{ id: r.data.job.id, state: 'running' }], 'it runs after its client is gone');
  const pids = pidsOf(join(sb.project, 'pids-d'));
  t.ok(pids.every(alive));
  const stop = await cli(sb, ['--json', 'engine', 'stop']);
  t.match(JSON.parse(stop.stdout), { stopped: true, cancelled_jobs: 1 });
  // Killed processes that were re-parented are reaped by init a moment later.
  await until(() => !pids.some(alive), 5000);
  t.notOk(pids.some(alive), 'engine stop ends it');
  t.equal(getJob(db(sb), r.data.job.id)?.state, 'cancelled');
});
