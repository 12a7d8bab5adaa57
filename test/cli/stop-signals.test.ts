// The long-running commands stop through their cleanup on SIGHUP (the terminal closed) as on
// SIGTERM and Ctrl-C, with real processes: mcp serve over stdio and over HTTP cancel their
// jobs, whose process groups are gone, and the sandbox placeholders lingering in the project
// go with the process, also when the signal comes while it is already cleaning up after the
// end of its input; engine start --foreground removes its socket and token; the console
// its record; test cancels its job. Without a handler Node dies of SIGHUP on the spot and
// leaves all of that behind. Where nothing handles them any more (a command that printed its
// result and still sends telemetry), they take the lingering placeholders with them.
// (run: test/engine/owners.test.ts.)
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { engineFiles } from '../../src/engine/daemon/files.js';
import { openDb } from '../../src/store/db.js';
import { exitWithin, startEngine } from '../fixtures/engine.js';
import { alive, BIN, cli, pidsOf, recordPid, type Sandbox, sandbox, sleep, TS_REQUIRE, until, withCodeCache, withMarker } from '../fixtures/env.js';
import { httpClient, startGateway, TOKEN } from '../fixtures/http.js';
import { INIT, serveArgs } from '../fixtures/mcp.js';

/** Protected paths (policy/sandbox.json project_read_only) missing from a fresh project: each gets a placeholder while a sandbox runs. */
const PLACEHOLDERS = ['.git', '.mcp.json', '.claude'];

/** A command that runs until it is killed, recording its own pid and its child's. */
const LONG = ['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`];

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A real CLI process (with the suite's code cache), its output and how it ended. */
function start(sb: Sandbox, argv: string[]) {
  const child = spawn(process.execPath, [BIN, ...argv], { cwd: sb.root, env: withCodeCache(sb.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  child.stdin.on('error', () => {});
  const exit = new Promise<Exit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, exit, out: () => out, err: () => err };
}

/**
 * The CLI in a process of its own that sends itself SIGHUP from inside the write of the line
 * `ready` matches: the signal is taken before the command gets back to its event loop, where
 * Node hands a signal to its listeners. A supervisor's signal sent on that line lands there
 * whenever the command is slow to run on after writing it, as on a busy machine; here it
 * lands there every time.
 */
function signalledAsItSays(t: Test, sb: Sandbox, argv: string[], ready: RegExp) {
  const code = `const { Readable, Writable } = require('node:stream');
const { main } = require(${JSON.stringify(fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url)))});
let signalled = false;
const stderr = new Writable({
  write(chunk, _enc, done) {
    process.stderr.write(chunk);
    if (!signalled && new RegExp(${JSON.stringify(ready.source)}).test(String(chunk))) {
      signalled = true;
      process.kill(process.pid, 'SIGHUP');
    }
    done();
  },
});
main(${JSON.stringify(argv)}, { stdin: Readable.from([]), stdout: process.stdout, stderr, env: process.env, cwd: process.cwd() }).then((c) => (process.exitCode = c));`;
  const child = spawn(process.execPath, [...TS_REQUIRE, '-e', code], { cwd: sb.root, env: sb.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<Exit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  t.teardown(() => child.kill('SIGKILL'));
  return { exit, err: () => err };
}

/** `mcp serve` over stdio, spoken to one JSON-RPC line at a time. */
async function stdioServer(t: Test, sb: Sandbox) {
  const child = spawn(process.execPath, serveArgs(sb, ['--allow-write', '--allow-approvals']), { env: withCodeCache(sb.env), stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  let buf = '';
  let err = '';
  const waiting = new Map<number, (m: any) => void>();
  child.stdout.on('data', (d) => {
    buf += d;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (typeof m.id === 'number') waiting.get(m.id)?.(m);
    }
  });
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<Exit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  let ids = 1;
  const request = (method: string, params: unknown) =>
    new Promise<any>((resolve, reject) => {
      const id = ++ids;
      waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${JSON.stringify(m.error)}`)) : resolve(m.result)));
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  const callTool = async ({ name, arguments: args }: { name: string; arguments?: Record<string, unknown> }) => request('tools/call', { name, arguments: args ?? {} });
  await request('initialize', INIT.params);
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return { child, exit, err: () => err, callTool };
}

type Caller = { callTool(p: { name: string; arguments?: Record<string, unknown> }): Promise<any> };

async function call(c: Caller, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await c.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}

/** A sandboxed test job, approved by the connection itself and running: its host pids. */
async function runningJob(t: Test, sb: Sandbox, c: Caller): Promise<{ jobId: string; pids: number[] }> {
  const sub = await call(c, 'shadow_test', { command: LONG });
  await call(c, 'shadow_approve', { approval_id: sub.approval.id, decision: 'approve' });
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2, 30000);
  const pids = pidsOf(join(sb.project, 'pids'));
  t.ok(pids.every(alive), 'the job runs');
  for (const n of PLACEHOLDERS) t.ok(existsSync(join(sb.project, n)), `${n}: a placeholder while the sandbox runs`);
  return { jobId: sub.job_id, pids };
}

/** What a stop through the cleanup leaves: no process of the job, no placeholder, no claim, the job cancelled by its owner. */
function cleanedUp(t: Test, sb: Sandbox, jobId: string, pids: number[]): void {
  t.notOk(pids.some(alive), "the job's processes are gone");
  for (const n of PLACEHOLDERS) t.notOk(existsSync(join(sb.project, n)), `${n}: the placeholder went with the process`);
  t.same(readdirSync(sb.profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
  const db = openDb(sb.profile, 5000);
  try {
    t.equal((db.prepare('SELECT state FROM jobs WHERE id = ?').get(jobId) as { state: string }).state, 'cancelled', 'the job was cancelled by its owner');
    const kinds = (db.prepare('SELECT kind FROM job_events WHERE job_id = ?').all(jobId) as Array<{ kind: string }>).map((e) => e.kind);
    t.notOk(kinds.includes('owner_gone'), 'not left for the next open to settle');
  } finally {
    db.close();
  }
}

for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
  t.test(`${signal} ends mcp serve over stdio through its cleanup: exit 0, its job's processes and the sandbox's placeholders gone`, async (t) => {
    const sb = sandbox('stop-stdio');
    await cli(sb, ['--project', sb.project, 'trust']);
    const s = await stdioServer(t, sb);
    const { jobId, pids } = await runningJob(t, sb, s);
    s.child.kill(signal);
    t.same(await s.exit, { code: 0, signal: null }, 'it exits 0, as at the end of its input', { stderr: s.err() });
    cleanedUp(t, sb, jobId, pids);
  });
}

t.test('a SIGTERM that finds mcp serve over stdio cleaning up after its input ended waits for that cleanup: exit 0, nothing left behind', async (t) => {
  const sb = sandbox('stop-stdio-end');
  await cli(sb, ['--project', sb.project, 'trust']);
  const s = await stdioServer(t, sb);
  // A job that says when it is told to stop: its owner's cleanup has begun.
  const sub = await call(s, 'shadow_test', { command: ['sh', '-c', `trap 'touch stopping; exit 143' TERM; sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`] });
  await call(s, 'shadow_approve', { approval_id: sub.approval.id, decision: 'approve' });
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2, 30000);
  const pids = pidsOf(join(sb.project, 'pids'));
  for (const n of PLACEHOLDERS) t.ok(existsSync(join(sb.project, n)), `${n}: a placeholder while the sandbox runs`);
  // The store held by another writer keeps that cleanup from finishing (it records how the job
  // ended), as a busy profile does: the signal comes while it is under way, whatever the load.
  const db = openDb(sb.profile, 5000);
  db.exec('BEGIN IMMEDIATE');
  try {
    s.child.stdin.end();
    await until(() => existsSync(join(sb.project, 'stopping')), 20000);
    s.child.kill('SIGTERM');
    // Let it arrive while the cleanup is still held up, not after it could finish.
    await sleep(200);
  } finally {
    db.exec('COMMIT');
    db.close();
  }
  t.same(await s.exit, { code: 0, signal: null }, 'not ended on the spot by the signal: exit 0, as at the end of its input', { stderr: s.err() });
  cleanedUp(t, sb, sub.job_id, pids);
});

t.test('SIGHUP stops the HTTP gateway as SIGTERM does: it says so, exits 0, and cleans up', async (t) => {
  const sb = sandbox('stop-http');
  await cli(sb, ['--project', sb.project, 'trust']);
  const gw = await startGateway(sb, ['--allow-write', '--allow-approvals']);
  t.teardown(() => gw.child.kill('SIGKILL'));
  const c = await httpClient(gw.url, 'v2-modern');
  const { jobId, pids } = await runningJob(t, sb, c);
  await c.close();
  gw.child.kill('SIGHUP');
  t.equal(await gw.exit, 0, gw.stderr());
  t.match(gw.stderr(), /SIGHUP: stopping the gateway\nshadowcode: gateway stopped\n$/);
  cleanedUp(t, sb, jobId, pids);
});

t.test('SIGHUP stops test: its job is cancelled and cleaned up, exit 1 as for any cancelled run', async (t) => {
  const sb = sandbox('stop-test');
  await cli(sb, ['--project', sb.project, 'trust']);
  const r = start(sb, ['--project', sb.project, 'test', '--yes', '--', ...LONG]);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2 || r.child.exitCode !== null, 30000);
  const pids = pidsOf(join(sb.project, 'pids'));
  t.ok(pids.every(alive), 'the command runs');
  for (const n of PLACEHOLDERS) t.ok(existsSync(join(sb.project, n)), `${n}: a placeholder while the sandbox runs`);
  const db = openDb(sb.profile, 5000);
  const jobs = db.prepare('SELECT id FROM jobs').all() as Array<{ id: string }>;
  db.close();
  t.equal(jobs.length, 1, 'one job, the command');
  r.child.kill('SIGHUP');
  t.same(await r.exit, { code: 1, signal: null }, 'our exit status for a cancelled run, not death by the signal', { stderr: r.err() });
  t.match(r.out(), new RegExp(`^cancelled: .*cancelled before it finished.*\\(job ${jobs[0]!.id}\\)$`, 'm'));
  cleanedUp(t, sb, jobs[0]!.id, pids);
});

t.test('Ctrl-C after test finished, while it still exports telemetry, ends it at once and takes the lingering placeholders with it', async (t) => {
  const sb = sandbox('stop-linger');
  await cli(sb, ['--project', sb.project, 'trust']);
  // A collector that takes the connection and never answers: the command waits for its export
  // (up to limits.telemetry.shutdown_ms) with its own stop handling over, its placeholders lingering.
  const held: Socket[] = [];
  const collector = createServer((sock) => held.push(sock.on('error', () => {})));
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of held) s.destroy();
    collector.close();
  });
  const port = (collector.address() as { port: number }).port;
  const r = start({ ...sb, env: { ...sb.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } }, ['--project', sb.project, 'test', '--yes', '--', 'true']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => (/^succeeded: /m.test(r.out()) && held.length > 0) || r.child.exitCode !== null, 30000);
  t.equal(r.child.exitCode, null, 'it waits for the collector', { stdout: r.out(), stderr: r.err() });
  for (const n of PLACEHOLDERS) t.ok(existsSync(join(sb.project, n)), `${n}: a placeholder lingers after the sandbox ended`);
  r.child.kill('SIGINT');
  t.same(await r.exit, { code: null, signal: 'SIGINT' }, 'ended by the signal, without waiting for the export');
  for (const n of PLACEHOLDERS) t.notOk(existsSync(join(sb.project, n)), `${n}: the placeholder went first`);
  t.same(readdirSync(sb.profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
});


for (const argv of [['mcp', 'tools', 'config:hang', '--refresh'], ['mcp', 'enable', 'config:hang', '--hash', 'HASH']]) {
  t.test(`Ctrl-C while ${argv.slice(0, 2).join(' ')} reads a server's catalog stops the server and takes the sandbox's placeholders with it`, async (t) => {
    const sb = sandbox('stop-review');
    await cli(sb, ['--project', sb.project, 'trust']);
    // A server that never answers initialize: the read would wait for its whole timeout.
    const marker = `97.${process.pid}${Math.floor(Math.random() * 1e6)}`;
    writeFileSync(join(sb.root, 'hang.yaml'), `name: hang\ncommand: ["/bin/sleep", "${marker}"]\n`);
    t.equal((await cli(sb, ['mcp', 'add', join(sb.root, 'hang.yaml')])).code, 0);
    const hash = JSON.parse((await cli(sb, ['--json', 'mcp'])).stdout).definitions.find((d: { id: string }) => d.id === 'config:hang').hash as string;
    if (argv[1] === 'tools') t.equal((await cli(sb, ['--project', sb.project, 'mcp', 'enable', 'config:hang', '--hash', hash, '--no-review'])).code, 0);
    const r = start(sb, ['--project', sb.project, ...argv.map((a) => (a === 'HASH' ? hash : a))]);
    t.teardown(() => r.child.kill('SIGKILL'));
    await until(() => withMarker(marker).length > 0 || r.child.exitCode !== null, 30000);
    t.equal(r.child.exitCode, null, 'the server runs and the read waits', { stdout: r.out(), stderr: r.err() });
    for (const n of PLACEHOLDERS) t.ok(existsSync(join(sb.project, n)), `${n}: a placeholder while the server's sandbox runs`);
    const at = Date.now();
    r.child.kill('SIGINT');
    const exit = await r.exit;
    t.ok(Date.now() - at < 10000, `ended promptly (${Date.now() - at} ms), not at the read's timeout`);
    t.equal(exit.signal, null, `ended through its own cleanup: ${JSON.stringify(exit)} ${r.err()}`);
    t.match(`${r.out()}${r.err()}`, /SC_CANCELLED/, 'says the read was cancelled');
    t.notMatch(`${r.out()}${r.err()}`, /hint: it ran in the sandbox/, 'with no hint about the sandbox: the cancel was yours');
    t.same(withMarker(marker), [], 'the server is gone');
    for (const n of PLACEHOLDERS) t.notOk(existsSync(join(sb.project, n)), `${n}: the placeholder went with it`);
    t.same(readdirSync(sb.profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
  });
}

t.test('SIGHUP stops engine start --foreground through its cleanup: exit 0, its socket and token removed', async (t) => {
  const sb = sandbox('stop-engine');
  const engine = await startEngine(t, sb);
  const files = engineFiles(sb.profile);
  t.ok(existsSync(files.sock) && existsSync(files.token), 'the engine listens');
  engine.child.kill('SIGHUP');
  t.equal(await exitWithin(engine.exited), 0, 'it exits 0', { stderr: engine.stderr() });
  t.match(engine.stderr(), /stopping \(SIGHUP\)[\s\S]*shadowcode engine: stopped\n/);
  t.notOk(existsSync(files.sock), 'engine.sock is removed');
  t.notOk(existsSync(files.token), 'engine.token is removed');
});

t.test('a SIGHUP that comes as engine start --foreground says it is ready is not lost: exit 0, its socket and token removed', async (t) => {
  const sb = sandbox('stop-engine-ready');
  const files = engineFiles(sb.profile);
  const r = signalledAsItSays(t, sb, ['engine', 'start', '--foreground'], /ready on /);
  t.same(await exitWithin(r.exit), { code: 0, signal: null }, 'it exits 0, the signal handled', { stderr: r.err() });
  t.match(r.err(), /ready on [\s\S]*stopping \(SIGHUP\)[\s\S]*shadowcode engine: stopped\n/);
  t.notOk(existsSync(files.sock), 'engine.sock is removed');
  t.notOk(existsSync(files.token), 'engine.token is removed');
});

t.test('a SIGHUP that comes as the HTTP gateway says it is ready stops it through its cleanup: exit 0', async (t) => {
  const sb = sandbox('stop-http-ready');
  await cli(sb, ['--project', sb.project, 'trust']);
  const r = signalledAsItSays(t, { ...sb, env: { ...sb.env, SHADOW_MCP_HTTP_TOKEN: TOKEN } }, ['--project', sb.project, 'mcp', 'serve', '--http', '127.0.0.1:0', '--token-env', 'SHADOW_MCP_HTTP_TOKEN'], /gateway ready at /);
  t.same(await exitWithin(r.exit), { code: 0, signal: null }, 'not ended by the signal on the spot: exit 0', { stderr: r.err() });
  t.match(r.err(), /gateway ready at [^\n]*\nshadowcode: SIGHUP: stopping the gateway\nshadowcode: gateway stopped\n$/);
});

t.test('SIGHUP stops the console through its cleanup: exit 0, its record removed', async (t) => {
  const sb = sandbox('stop-console');
  const r = start(sb, ['console', '--port', '0']);
  t.teardown(() => r.child.kill('SIGKILL'));
  await until(() => /open http:/.test(r.out()) || r.child.exitCode !== null, 20000);
  t.ok(existsSync(join(sb.profile, 'console.json')), 'the console has its record');
  r.child.kill('SIGHUP');
  t.same(await r.exit, { code: 0, signal: null }, r.err());
  t.match(r.out(), /shadowcode console: SIGHUP: stopped\n$/);
  t.notOk(existsSync(join(sb.profile, 'console.json')), 'its record is removed on the way out');
});
