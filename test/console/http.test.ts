// The console's door, over plain HTTP: the headers every answer carries, the one-time
// code and its cookie, Host and Origin, and decisions taken only on the digest shown.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import t, { type Test } from 'tap';
import { mintCode, spendCode } from '../../src/console/codes.js';
import { approvalDigest } from '../../src/console/digest.js';
import { open } from '../../src/lib/index.js';
import { startConsole } from '../fixtures/console.js';
import { alive, cli, pidsOf, recordPid, ROOT, sandbox, sleep, spawnCli, TS_REQUIRE, until } from '../fixtures/env.js';
import { openDb } from '../../src/store/db.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** A raw line-oriented MCP peer on an embedded stdio server (a job that asks to run a command). */
async function stdioPeer(sb: ReturnType<typeof sandbox>) {
  const sc = await open({ profile: sb.profile, workspace: sb.project, env: { PATH: process.env.PATH as string }, name: 'tests' });
  const input = new PassThrough();
  const output = new PassThrough();
  const answers = new Map<number, (v: any) => void>();
  let buf = '';
  output.on('data', (d) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop() as string;
    for (const l of lines) {
      const m = JSON.parse(l);
      if (m.id !== undefined) answers.get(m.id)?.(m);
    }
  });
  let id = 0;
  const rpc = (method: string, params: unknown) =>
    new Promise<any>((resolve) => {
      answers.set(++id, resolve);
      input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  await sc.serveStdio({ input, output, allowWrite: true });
  await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
  input.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  const test = async (argv: string[]) => (await rpc('tools/call', { name: 'shadow_test', arguments: { command: argv } })).result.structuredContent as { job_id: string; approval: { id: string } };
  return { sc, test };
}

/** A project trusted at workspace, a stdio peer on it, and the console signed in: closed on teardown. */
async function consoleBesidePeer(t: Test, name: string) {
  const sb = sandbox(name);
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const { sc, test } = await stdioPeer(sb);
  t.teardown(() => sc.close());
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  return { sb, sc, test, c, cookie: await c.signIn() };
}

function jobState(sb: ReturnType<typeof sandbox>, id: string): string {
  const db = openDb(sb.profile, 5000);
  try {
    return (db.prepare('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string }).state;
  } finally {
    db.close();
  }
}

t.test('every answer carries the CSP and the other headers; the page needs the cookie', async (t) => {
  const sb = sandbox('console-headers');
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  t.match(c.h.url, /^http:\/\/127\.0\.0\.1:\d+\/console\/\?code=[A-Za-z0-9_-]{20,}$/, 'a loopback address with a one-time code');
  const record = join(sb.profile, 'console.json');
  t.equal(statSync(record).mode & 0o777, 0o600, 'the running console is recorded 0600');
  t.notMatch(await import('node:fs').then((f) => f.readFileSync(record, 'utf8')), new URL(c.h.url).searchParams.get('code') as string, 'the record holds no usable code');
  const codes = join(sb.profile, 'console-codes');
  t.equal(statSync(codes).mode & 0o777, 0o700, 'the codes folder is 0700');
  const [only, ...more] = readdirSync(codes);
  t.same(more, [], 'one code so far');
  t.match(only, /^[0-9a-f]{64}$/, 'named by its digest, never the code');
  t.equal(statSync(join(codes, only as string)).mode & 0o777, 0o600);

  for (const path of ['/console/', '/console/api/events', '/console/app.js']) {
    const r = await c.raw('GET', path);
    t.equal(r.headers['content-security-policy'], CSP, `${path}: CSP`);
    t.equal(r.headers['x-content-type-options'], 'nosniff');
    t.equal(r.headers['referrer-policy'], 'no-referrer');
    t.equal(r.headers['cache-control'], 'no-store');
  }
  t.equal((await c.raw('GET', '/console/')).status, 401, 'no cookie: the page is refused');
  t.equal((await c.raw('GET', '/console/api/events')).status, 401, 'no cookie: the feed is refused');
  t.equal((await c.raw('GET', '/console/api/audit')).status, 401, 'no cookie: the data is refused');
  t.equal((await c.raw('GET', '/console/', { cookie: 'sc_console=forged' })).status, 401, 'a made-up cookie is refused');
  t.equal((await c.raw('GET', '/elsewhere')).status, 404);
  t.equal((await c.raw('GET', '/console')).headers.location, '/console/', 'the page address gets its slash');

  const u = new URL(c.h.url);
  const first = await c.raw('GET', `${u.pathname}${u.search}`);
  t.equal(first.status, 303, 'the code is exchanged');
  t.equal(first.headers.location, '/console/', 'and the address loses the code');
  const set = String((first.headers['set-cookie'] as string[])[0]);
  t.match(set, /^sc_console=[A-Za-z0-9_-]{40,}; HttpOnly; SameSite=Strict; Path=\/console; Max-Age=\d+$/);
  const cookie = set.split(';')[0] as string;
  const replay = await c.raw('GET', `${u.pathname}${u.search}`);
  t.equal(replay.status, 401, 'a replayed code is refused');
  t.match(JSON.parse(replay.body), { error: { code: 'SC_CONSOLE_REFUSED', message: /already used/ } });
  const page = await c.raw('GET', '/console/', { cookie });
  t.equal(page.status, 200);
  t.match(page.body, /<script src="app\.js" defer><\/script>/);
  t.notMatch(page.body, /https?:\/\//, 'nothing is loaded from elsewhere');
  t.equal(page.headers['content-security-policy'], CSP);
});

t.test('Host and Origin must be the console\'s own', async (t) => {
  const sb = sandbox('console-origin');
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const cookie = await c.signIn();
  t.equal((await c.raw('GET', '/console/', { cookie, host: 'evil.example:80' })).status, 403, 'another Host (DNS rebinding) is refused');
  t.equal((await c.raw('GET', '/console/', { cookie, host: `localhost:${c.h.port}` })).status, 200, 'localhost with the port is the console');
  t.equal((await c.raw('GET', '/console/api/audit', { cookie, origin: 'http://evil.example' })).status, 403, 'a read from another Origin is refused');
  const body = JSON.stringify({ project: sb.project, task: 'job_x' });
  t.equal((await c.raw('POST', '/console/api/rollback', { cookie, origin: 'http://evil.example', 'content-type': 'application/json' }, body)).status, 403, 'a POST from another Origin is refused');
  t.equal((await c.raw('POST', '/console/api/rollback', { cookie, origin: `http://127.0.0.1:${c.h.port + 1}`, 'content-type': 'application/json' }, body)).status, 403, 'another port is another origin');
  t.equal((await c.raw('POST', '/console/api/rollback', { cookie, 'content-type': 'application/json' }, body)).status, 403, 'a POST without an Origin is refused');
  t.equal((await c.raw('POST', '/console/api/rollback', { origin: c.origin, 'content-type': 'application/json' }, body)).status, 401, 'a POST without the cookie is refused');
  const elsewhere = await c.raw('GET', `/console/api/review?project=${encodeURIComponent(sb.root)}&task=job_x`, { cookie });
  t.match(JSON.parse(elsewhere.body), { error: { code: 'SC_WORKSPACE_INVALID', message: /not a trusted project/ } }, 'only trusted projects of the profile are reachable');
  const big = await c.raw('POST', '/console/api/rollback', { cookie, origin: c.origin, 'content-type': 'application/json' }, JSON.stringify({ pad: 'x'.repeat(70000) }));
  t.equal(big.status, 413, 'a body over console.body_bytes is refused');
  const db = openDb(sb.profile, 5000);
  const refused = db.prepare("SELECT body FROM audit WHERE kind = 'decision' AND body LIKE '%http:refused%' AND body LIKE '%console%'").all();
  db.close();
  t.ok(refused.length >= 5, `refusals are audited with the console as channel (${refused.length})`);
});

t.test('a decision needs the digest of the approval as stored; the right one acts, audited as the console', async (t) => {
  const { sb, sc, test, c, cookie } = await consoleBesidePeer(t, 'console-decide');

  const job = await test(['sh', '-c', 'echo decided > decided.txt']);
  const [a] = await sc.approvals();
  t.equal(a?.id, job.approval.id);
  const stale = approvalDigest({ ...(a as any), action: { ...(a as any).action, argv: ['sh', '-c', 'echo harmless'] } });
  const refused = await c.post(cookie, 'decide', { id: job.approval.id, decision: 'approve', digest: stale });
  t.equal(refused.status, 409);
  t.match(JSON.parse(refused.body), { error: { code: 'SC_APPROVAL_CHANGED' } });
  t.equal((await sc.approvals()).length, 1, 'a stale digest decides nothing');
  t.equal((await c.post(cookie, 'decide', { id: job.approval.id, decision: 'maybe', digest: stale })).status, 400);

  const ok = await c.post(cookie, 'decide', { id: job.approval.id, decision: 'approve', digest: approvalDigest(a as any) });
  t.equal(ok.status, 200, ok.body);
  t.match(JSON.parse(ok.body), { approval: { id: job.approval.id, state: 'approved', decided_by: 'console' } });
  await until(() => existsSync(join(sb.project, 'decided.txt')), 20000);
  const again = await c.post(cookie, 'decide', { id: job.approval.id, decision: 'deny', digest: approvalDigest(a as any) });
  t.match(JSON.parse(again.body), { error: { code: 'SC_APPROVAL_NOT_PENDING' } });

  const denied = await test(['sh', '-c', 'echo never > never.txt']);
  const [b] = await sc.approvals();
  t.equal((await c.post(cookie, 'decide', { id: denied.approval.id, decision: 'deny', digest: approvalDigest(b as any) })).status, 200);
  await until(() => ['cancelled', 'failed'].includes(jobState(sb, denied.job_id)));
  t.notOk(existsSync(join(sb.project, 'never.txt')), 'a denied command never ran');

  const db = openDb(sb.profile, 5000);
  const rows = db.prepare("SELECT body FROM audit WHERE kind = 'decision' AND body LIKE '%cli:approvals.%'").all() as Array<{ body: string }>;
  db.close();
  t.ok(rows.some((r) => /"owner":"console"/.test(r.body) && /cli:approvals\.approve/.test(r.body)), 'the approval is a cli: decision audited with owner console');
});

t.test('cancel needs the cookie and the Origin; it stops a running job of another engine, audited as the console', async (t) => {
  const { sb, sc, test, c, cookie } = await consoleBesidePeer(t, 'console-cancel');

  const job = await test(['sh', '-c', `sleep 60 & ${recordPid('$!', 'pids')}; ${recordPid('$$', 'pids')}; wait`]);
  await sc.decide(job.approval.id, 'approve');
  await until(() => pidsOf(join(sb.project, 'pids')).length === 2 && pidsOf(join(sb.project, 'pids')).every(alive), 20000);
  const pids = pidsOf(join(sb.project, 'pids'));
  const body = JSON.stringify({ project: sb.project, id: job.job_id });
  t.equal((await c.raw('POST', '/console/api/cancel', { cookie, 'content-type': 'application/json' }, body)).status, 403, 'without the Origin it is refused');
  t.equal((await c.raw('POST', '/console/api/cancel', { origin: c.origin, 'content-type': 'application/json' }, body)).status, 401, 'without the cookie it is refused');
  t.equal(jobState(sb, job.job_id), 'running', 'a refused cancel stops nothing');

  const ok = await c.post(cookie, 'cancel', { project: sb.project, id: job.job_id });
  t.equal(ok.status, 200, ok.body);
  t.match(JSON.parse(ok.body), { job: { id: job.job_id, state: 'cancelled' }, ended: true });
  await until(() => !pids.some(alive), 10000);
  t.notOk(pids.some(alive), "the command's processes are gone");
  const again = await c.post(cookie, 'cancel', { project: sb.project, id: job.job_id });
  t.equal(again.status, 409);
  t.match(JSON.parse(again.body), { error: { code: 'SC_JOB_NOT_RUNNING' } });

  const db = openDb(sb.profile, 5000);
  const rows = db.prepare("SELECT body FROM audit WHERE kind = 'decision' AND body LIKE '%cli:jobs.cancel%'").all() as Array<{ body: string }>;
  db.close();
  t.ok(rows.some((r) => /"owner":"console"/.test(r.body) && r.body.includes(job.job_id)), 'the cancel is a cli: decision audited with owner console');
});

t.test('console --code mints a code for a second browser; without a console it says so', async (t) => {
  const sb = sandbox('console-code');
  await cli(sb, ['--project', sb.project, 'trust']);
  const none = await cli(sb, ['console', '--code']);
  t.equal(none.code, 1);
  t.match(none.stderr, /no console is running.*\[SC_CONSOLE_NOT_RUNNING\]/);
  const c = await startConsole(sb);
  const first = await c.signIn();
  const second = await cli(sb, ['console', '--code']);
  t.equal(second.code, 0, second.stderr);
  const url = (second.stdout.match(/http:\S+/) as RegExpMatchArray)[0];
  t.not(url, c.h.url, 'a new code');
  const cookie2 = await c.signIn(url);
  t.not(cookie2, first, 'the second browser has its own cookie');
  t.equal((await c.raw('GET', '/console/', { cookie: cookie2 })).status, 200);
  t.equal((await c.raw('GET', new URL(url).pathname + new URL(url).search)).status, 401, 'that code is spent too');
  t.match((await cli(sb, ['console', '--code', '--open'])).stderr, /\[SC_USAGE\]/);
  t.match((await cli(sb, ['--json', 'console'])).stdout, /SC_USAGE/, 'console does not take --json');
  await c.close();
  t.notOk(existsSync(join(sb.profile, 'console.json')), 'the record goes with the console');
  t.notOk(existsSync(join(sb.profile, 'console-codes')), 'and so do its codes');
  t.match((await cli(sb, ['console', '--code'])).stderr, /SC_CONSOLE_NOT_RUNNING/);
});

t.test('codes minted by another process while the console spends codes: each works once, none comes back, none is lost', async (t) => {
  const sb = sandbox('console-race');
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  await c.signIn(); // the console's first code
  const ttl = 60000;
  const ours = Array.from({ length: 20 }, () => mintCode(sb.profile, ttl).url);
  // Another process (as `shadowcode console --code` is) mints codes back to back until told to stop.
  const stop = join(sb.root, 'stop-minting');
  const script = `
    const { existsSync } = require('node:fs');
    const { mintCode } = require(${JSON.stringify(join(ROOT, 'src/console/codes.ts'))});
    const urls = [];
    process.stdout.write('ready\\n');
    while (!existsSync(${JSON.stringify(stop)}) && urls.length < 400) urls.push(mintCode(${JSON.stringify(sb.profile)}, ${ttl}).url);
    process.stdout.write(JSON.stringify(urls) + '\\n');`;
  const child = spawn(process.execPath, [...TS_REQUIRE, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await until(() => out.startsWith('ready') || child.exitCode !== null, 15000);
  for (const url of ours) await c.signIn(url);
  writeFileSync(stop, '');
  t.equal(await exited, 0, 'the minting process ran to its end');
  const theirs = JSON.parse(out.split('\n')[1] as string) as string[];
  t.ok(theirs.length > 0, `the other process minted ${theirs.length} codes meanwhile`);

  // Checked on the console's own spend (the sign-in above went through it), not over HTTP: these are more requests than the console takes in a second.
  const code = (url: string) => new URL(url).searchParams.get('code') as string;
  t.same(ours.map((url) => spendCode(sb.profile, code(url))), ours.map(() => false), 'no spent code is accepted again');
  t.same(theirs.map((url) => spendCode(sb.profile, code(url))), theirs.map(() => true), 'every code the other process minted is there');
  t.same(theirs.map((url) => spendCode(sb.profile, code(url))), theirs.map(() => false), 'and is spent once');
  t.same(readdirSync(join(sb.profile, 'console-codes')), [], 'and then none is left');
});

t.test('an expired code is refused, and the next code minted sweeps expired ones away', async (t) => {
  const sb = sandbox('console-expiry');
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  await c.signIn();
  const gone = mintCode(sb.profile, 1);
  const left = mintCode(sb.profile, 1);
  await sleep(10);
  const r = await c.raw('GET', new URL(gone.url).pathname + new URL(gone.url).search);
  t.equal(r.status, 401, 'a code past its expiry does not sign in');
  t.match(JSON.parse(r.body), { error: { code: 'SC_CONSOLE_REFUSED', message: /unknown, expired or already used/ } });
  const fresh = mintCode(sb.profile, 60000);
  t.equal(readdirSync(join(sb.profile, 'console-codes')).length, 1, 'only the fresh code is kept');
  t.notOk(spendCode(sb.profile, new URL(left.url).searchParams.get('code') as string), 'the swept one is unknown');
  await c.signIn(fresh.url);
});

t.test('the feed starts with the state and needs no second request', async (t) => {
  const sb = sandbox('console-feed');
  await cli(sb, ['--project', sb.project, 'trust']);
  const c = await startConsole(sb);
  t.teardown(() => c.close());
  const cookie = await c.signIn();
  const r = await fetch(`${c.origin}/console/api/events`, { headers: { cookie } });
  t.equal(r.status, 200);
  t.equal(r.headers.get('content-type'), 'text/event-stream');
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  t.match(text, /^event: state\ndata: /);
  const state = JSON.parse(text.split('\n')[1]!.slice(6));
  t.same(state.projects.map((p: { path: string; jobs: unknown[]; approvals: unknown[] }) => [p.path, p.jobs, p.approvals]), [[sb.project, [], []]], 'the one trusted project, with no job and no approval');
});

t.test('the feed sends what changed, whichever process or connection wrote it', async (t) => {
  const { sb, sc, test, c, cookie } = await consoleBesidePeer(t, 'console-feed-live');
  const r = await fetch(`${c.origin}/console/api/events`, { headers: { cookie } });
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  t.teardown(() => reader.cancel());
  const states: any[] = [];
  const steps: any[] = [];
  void (async () => {
    let text = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      text += new TextDecoder().decode(value);
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const m = /^event: (\w+)\ndata: (.*)$/s.exec(text.slice(0, end));
        text = text.slice(end + 2);
        if (m) (m[1] === 'state' ? states : steps).push(JSON.parse(m[2] as string));
      }
    }
  })();
  await until(() => states.length === 1);
  const last = () => states[states.length - 1];
  const approvalsNow = () => last().projects.flatMap((p: any) => p.approvals);

  // Another process commits: a second project is trusted by a separate CLI process.
  const other = join(sb.root, 'other');
  mkdirSync(other);
  const trusted = await spawnCli(sb, ['--project', other, 'trust']);
  t.equal(trusted.code, 0, trusted.stderr);
  await until(() => last().projects.some((p: any) => p.path === other), 10000);
  t.pass('a commit by another process reaches the page');

  // Another connection in this process: a job asks for an approval.
  const job = await test(['sh', '-c', 'echo fed > fed.txt']);
  await until(() => approvalsNow().some((a: any) => a.id === job.approval.id), 10000);
  t.pass('a pending approval from another connection reaches the page');

  // The console decides it itself; the job then runs and records its steps.
  const [a] = await sc.approvals();
  t.equal((await c.post(cookie, 'decide', { id: job.approval.id, decision: 'approve', digest: approvalDigest(a as any) })).status, 200);
  await until(() => !approvalsNow().some((x: any) => x.id === job.approval.id), 10000);
  t.pass("the console's own decision reaches the page");
  const jobNow = () => last().projects.flatMap((p: any) => p.jobs).find((j: any) => j.id === job.job_id);
  await until(() => jobNow()?.state === 'succeeded', 20000);
  t.ok(existsSync(join(sb.project, 'fed.txt')), 'the approved command ran, and the page saw it finish');
  t.ok(steps.some((s) => s.job_id === job.job_id), 'with its steps');
});

t.test('the built command prints its address, --open hands it to the desktop opener, SIGTERM stops it', async (t) => {
  const { spawn } = await import('node:child_process');
  const { chmodSync, mkdirSync, readFileSync, writeFileSync } = await import('node:fs');
  const { BIN } = await import('../fixtures/env.js');
  const sb = sandbox('console-open');
  await cli(sb, ['--project', sb.project, 'trust']);
  const bin = join(sb.root, 'bin');
  mkdirSync(bin);
  const opened = join(sb.root, 'opened.txt');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > ${opened}\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  const child = spawn(process.execPath, [BIN, 'console', '--open'], { cwd: sb.root, env: { ...sb.env, PATH: `${bin}:${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  await until(() => existsSync(opened) && readFileSync(opened, 'utf8').length > 0, 20000);
  const url = readFileSync(opened, 'utf8');
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/console\/\?code=/, 'the opener got the address with its code');
  t.match(out, url, 'the same address is printed');
  const second = await cli(sb, ['console']);
  t.equal(second.code, 2);
  t.match(second.stderr, /a console already runs for this profile at http:\/\/127\.0\.0\.1:\d+\/console\/; for another browser run shadowcode console --code/, 'one console per profile');
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  t.equal(await exited, 0, err);
  t.notOk(existsSync(join(sb.profile, 'console.json')), 'its record is removed on the way out');

  // Where no opener exists, it says so and the printed address still works.
  const empty = join(sb.root, 'empty');
  mkdirSync(empty);
  const bare = spawn(process.execPath, [BIN, 'console', '--open'], { cwd: sb.root, env: { ...sb.env, PATH: empty }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => bare.kill('SIGKILL'));
  let said = '';
  bare.stderr.on('data', (d) => (said += d));
  let printed = '';
  bare.stdout.on('data', (d) => (printed += d));
  await until(() => /no browser opener/.test(said), 20000);
  t.match(said, /no browser opener \(xdg-open\) was found; open the address above yourself/);
  const addr = (printed.match(/http:\S+/) as RegExpMatchArray)[0];
  const u = new URL(addr);
  const r = await fetch(addr, { redirect: 'manual' });
  t.equal(r.status, 303, `the printed address signs in (${u.host})`);
  const ended = new Promise<number | null>((r) => bare.once('exit', (code) => r(code)));
  bare.kill('SIGINT');
  t.equal(await ended, 0);
});
