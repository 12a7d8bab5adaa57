// engine start / status / stop as a user runs them: one engine per profile, a
// second start reports it, a stale socket is replaced, racing starts leave one,
// and stop cancels running jobs and leaves no process behind.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import t, { type Test } from 'tap';
import { command as engineStart } from '../../src/cli/commands/engine-start.js';
import { Ctx } from '../../src/cli/context.js';
import { engineFiles } from '../../src/engine/daemon/files.js';
import { acquireEngineLock } from '../../src/engine/daemon/lock.js';
import { shippedPolicy } from '../../src/policy/load.js';
import { isValid } from '../../src/schema/validate.js';
import { ensureProfileDir } from '../../src/store/profile.js';
import { alive, BIN, cli, type Ran, sandbox, type Sandbox, spawnCli, until, withCodeCache } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { startEngine } from '../fixtures/engine.js';
import { processesWith } from '../fixtures/mcp-client.js';

/** Engines `engine start` puts in the background are this test's to kill. */
function reap(t: Test, pid: number) {
  t.teardown(() => {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
}

/** `engine start`, a real process unless `run` says otherwise. */
async function start(t: Test, sb: Sandbox, run: (sb: Sandbox, argv: string[]) => Promise<Ran> = spawnCli) {
  const r = await run(sb, ['--json', 'engine', 'start']);
  const data = JSON.parse(r.stdout);
  if (data.engine?.pid) reap(t, data.engine.pid);
  return { r, data };
}

/** Engine processes of this profile, from the process table. */
function enginesOf(sb: Sandbox): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).stdout;
  return ps.split('\n').filter((l) => l.includes('engine start --foreground') && l.includes(sb.profile)).map((l) => Number(l.trim().split(/\s+/)[0]));
}

t.test('engine start runs one engine in the background; a second start reports it', async (t) => {
  const sb = sandbox('eng');
  const first = await start(t, sb);
  t.equal(first.r.code, 0, first.r.stderr);
  t.match(first.data, { started: true, engine: { pid: Number }, socket: join(sb.profile, 'engine.sock') });
  t.equal(statSync(join(sb.profile, 'engine.sock')).mode & 0o777, 0o600, 'the socket is 0600');
  t.equal(statSync(sb.profile).mode & 0o777, 0o700, 'in a 0700 profile directory');
  t.equal(statSync(join(sb.profile, 'engine.token')).mode & 0o777, 0o600, 'the token file is 0600');
  // Only a question to the running engine: in this process (the racing starts below ask it as processes).
  const second = await start(t, sb, cli);
  t.equal(second.r.code, 0);
  t.match(second.data, { started: false, engine: { pid: first.data.engine.pid } });
  const st = await cli(sb, ['--json', 'engine', 'status']);
  const idle = JSON.parse(st.stdout);
  t.match(idle, { running: true, engine: { pid: first.data.engine.pid } });
  t.same([idle.owners, idle.jobs, idle.background], [[], [], []], 'no owner, no job, no background process');
  const text = await cli(sb, ['engine', 'status']);
  t.match(text.stdout, new RegExp(`engine\\s+pid ${first.data.engine.pid}`));
  const status = JSON.parse((await cli(sb, ['--json', 'status'])).stdout);
  t.ok(isValid('status', status));
  t.match(status.engine, { mode: 'shared', pid: first.data.engine.pid });
  t.equal((await cli(sb, ['engine', 'stop'])).code, 0);
  t.match(JSON.parse((await cli(sb, ['--json', 'status'])).stdout).engine, { mode: 'temporary', pid: null });
});

t.test('a stale socket of a killed engine is detected and replaced', async (t) => {
  const sb = sandbox('eng');
  const e = await startEngine(t, sb);
  e.child.kill('SIGKILL');
  await e.exited;
  t.ok(existsSync(join(sb.profile, 'engine.sock')), 'the dead engine left its socket');
  t.match(JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout), { running: false });
  const stop = await cli(sb, ['engine', 'stop']);
  t.equal(stop.code, 0, 'nothing to stop is not an error, as an engine already running is not for engine start');
  t.match(stop.stdout, /^no engine is running for .*; nothing to stop\n$/);
  t.match(JSON.parse((await cli(sb, ['--json', 'engine', 'stop'])).stdout), { stopped: false, running: false });
  const again = await start(t, sb);
  t.match(again.data, { started: true });
  t.not(again.data.engine.pid, e.pid);
  t.match(JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout), { running: true, engine: { pid: again.data.engine.pid } });
  await cli(sb, ['engine', 'stop']);
});

t.test('racing starts leave exactly one engine', async (t) => {
  const sb = sandbox('eng');
  const runs = await Promise.all([0, 1, 2, 3].map(() => start(t, sb)));
  for (const r of runs) t.equal(r.r.code, 0, r.r.stderr);
  const pids = new Set(runs.map((r) => r.data.engine.pid));
  t.equal(pids.size, 1, 'every start names the same engine');
  t.equal(runs.filter((r) => r.data.started).length, 1, 'exactly one of them started it');
  await until(() => enginesOf(sb).length === 1);
  t.same(enginesOf(sb), [...pids], 'one engine process for the profile');
  await cli(sb, ['engine', 'stop']);
  await until(() => enginesOf(sb).length === 0);
});

t.test('a start that loses the lock to an engine that never answers fails once the start deadline passes', async (t) => {
  const sb = sandbox('eng');
  ensureProfileDir(sb.profile);
  // The holder: this test process, which takes the lock and never opens a socket.
  const lock = acquireEngineLock(engineFiles(sb.profile).lock);
  t.ok(lock, 'the test holds the profile lock');
  t.teardown(() => lock?.release());
  // The deadline through the policy a host passes in, rather than waiting out the shipped 10 s.
  const shipped = shippedPolicy();
  const policy = { ...shipped, limits: { ...shipped.limits, engine: { ...shipped.limits.engine, start_deadline_ms: 300 } } };
  const sink = new PassThrough().resume();
  const ctx = new Ctx({ stdin: new PassThrough(), stdout: sink, stderr: sink, env: sb.env, cwd: sb.root }, { json: true, help: false, version: false }, { policy, owner: 'cli' });
  const began = Date.now();
  await t.rejects(engineStart.run(ctx, { options: { foreground: true }, args: [] }), {
    code: 'SC_ENGINE_START_FAILED',
    message: /another engine holds the profile lock but did not answer on its socket within 300 ms; try again/,
  });
  t.ok(Date.now() - began >= 300, 'it waited for the holder to answer until the deadline');
  t.notOk(existsSync(join(sb.profile, 'engine.sock')), 'the losing start left no socket');
  t.same(enginesOf(sb), [], 'and no engine process');
});

t.test('engine stop cancels running jobs and leaves no process', async (t) => {
  const sb = sandbox('eng');
  await cli(sb, ['--project', sb.project, 'trust']);
  const { data } = await start(t, sb);
  // Pids inside the sandbox are its own PID namespace's: the host's process table is searched by a marker instead.
  const mark = `engine-stop-${process.pid}-${Date.now()}`;
  const started = join(sb.project, 'started');
  const testRun = spawn(process.execPath, [BIN, '--project', sb.project, 'test', '--yes', '--', 'sh', '-c', `sh -c 'sleep 60; : ${mark}-child' & echo started > started; wait`], { env: withCodeCache(sb.env), stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => testRun.kill('SIGKILL'));
  const done = new Promise<number | null>((r) => testRun.on('close', (c) => r(c)));
  await until(() => existsSync(started) && processesWith(`${mark}-child`).length >= 1);
  const st = JSON.parse((await cli(sb, ['--json', 'engine', 'status'])).stdout);
  t.equal(st.jobs.length, 1, 'the engine runs the test job');
  t.same(fields(st.owners, ['transport', 'project']), [{ transport: 'cli', project: sb.project }], 'owned by the test command, and by nothing else');
  const stop = await cli(sb, ['--json', 'engine', 'stop']);
  t.equal(stop.code, 0, stop.stderr);
  t.match(JSON.parse(stop.stdout), { stopped: true, pid: data.engine.pid, cancelled_jobs: 1 });
  t.notOk(alive(data.engine.pid), 'the engine is gone');
  // The sleep was re-parented when its shell died; init reaps it a moment later.
  await until(() => processesWith(mark).length === 0, 5000);
  t.same(processesWith(mark), [], 'the command and its child are gone');
  t.not(await done, 0, 'the test command reports the cancelled job');
  t.same(enginesOf(sb), []);
});
