// Placeholders for the project's missing protected paths, across real processes: a
// placeholder another process's sandbox stands on is never removed under it; a process
// that died holding one does not keep it forever; nothing of the user's is ever removed;
// a start that cannot take the registry's lock fails and strands nothing; a stop signal
// gives back what only lingers, never what a running sandbox stands on.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { holdProtected } from '../../../src/engine/spawn/holds.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { sandbox, TS_REQUIRE } from '../../fixtures/env.js';

const NAMES = ['.git', '.mcp.json', '.claude'];

/** The shipped limits of a hold, with this linger. */
const limits = (linger = 0) => ({ ...shippedPolicy().limits.sandbox, placeholder_linger_ms: linger });

/** Another process holding the project: resolves once it holds; `end()` makes it release and exit (with `linger`: release, then exit before it passed). */
async function holder(project: string, profile: string, linger = 0) {
  const code = `const { holdProtected } = require(${JSON.stringify(fileURLToPath(new URL('../../../src/engine/spawn/holds.ts', import.meta.url)))});
const h = holdProtected(${JSON.stringify(project)}, ${JSON.stringify(NAMES)}, ${JSON.stringify(profile)}, ${JSON.stringify(limits(linger))});
process.stdout.write('held\\n');
process.stdin.on('data', () => { h.release(); process.stdout.write('released\\n'); process.exit(0); });`;
  const child = spawn(process.execPath, [...TS_REQUIRE, '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('held\n')) resolve();
    });
    child.on('exit', (c) => reject(new Error(`holder exited ${c}`)));
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return { child, end: async () => (child.stdin.end('go\n'), await exited), kill: async () => (child.kill('SIGKILL'), await exited) };
}

function profileDir(sb: { profile: string }) {
  mkdirSync(sb.profile, { recursive: true, mode: 0o700 });
  return sb.profile;
}

t.test('every placeholder is an empty folder, a file name such as .mcp.json too', async (t) => {
  const sb = sandbox('sc-holds');
  const h = holdProtected(sb.project, NAMES, profileDir(sb), limits());
  for (const n of NAMES) t.ok(lstatSync(join(sb.project, n)).isDirectory(), n);
  h.release();
});

t.test("another process's hold keeps the placeholders; the last release removes them", async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const other = await holder(sb.project, profile);
  t.teardown(() => other.kill().catch(() => {}));
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} placeholder made by the other process`);
  const mine = holdProtected(sb.project, NAMES, profile, limits());
  t.same(mine.made, [], 'nothing new to make');
  mine.release();
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} stays while the other process holds it`);
  await other.end();
  // The other process was the last: it removed them on its release.
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} is gone after the last release`);
});

t.test('a process that died holding the project does not keep the placeholders for ever', async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const dead = await holder(sb.project, profile);
  await dead.kill();
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} left behind by the killed process`);
  const next = holdProtected(sb.project, NAMES, profile, limits());
  next.release();
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} is cleaned up by the next sandbox in the project`);
});

t.test("what the user put in a placeholder, or had already, stays", async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  mkdirSync(join(sb.project, '.claude')); // the user's own, empty
  const h = holdProtected(sb.project, NAMES, profile, limits());
  t.same(h.made.map((p) => p.slice(sb.project.length + 1)).sort(), ['.git', '.mcp.json'], 'only the missing ones are made');
  writeFileSync(join(sb.project, '.git', 'HEAD'), 'ref: refs/heads/main\n'); // `git init` on the host meanwhile
  h.release();
  t.ok(existsSync(join(sb.project, '.claude')), "the user's empty .claude stays");
  t.equal(readFileSync(join(sb.project, '.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n', 'a placeholder someone wrote into stays');
  t.notOk(existsSync(join(sb.project, '.mcp.json')), 'the untouched placeholder went');
});

for (const linger of [0, 600000]) {
  t.test(`a placeholder that cannot be made fails the start with SC_SANDBOX_SETUP_FAILED and takes back what was made at once (linger ${linger} ms)`, async (t) => {
    const sb = sandbox('sc-holds');
    const profile = profileDir(sb);
    const tooLong = 'x'.repeat(300); // ENAMETOOLONG: not a case the command could get past either, but not one to ignore
    t.throws(() => holdProtected(sb.project, ['.git', tooLong], profile, limits(linger)), { code: 'SC_SANDBOX_SETUP_FAILED' });
    t.notOk(existsSync(join(sb.project, '.git')), 'the placeholder made before the failure is gone');
    t.same(readdirSync(profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
  });
}

t.test('after the last release the placeholders linger: a hold meanwhile stands on the very same ones, and they go once it passed', async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const first = holdProtected(sb.project, NAMES, profile, limits(300));
  const inodes = () => NAMES.map((n) => lstatSync(join(sb.project, n), { throwIfNoEntry: false })?.ino ?? null);
  const made = inodes();
  first.release();
  t.same(inodes(), made, 'still there right after the release');
  const second = holdProtected(sb.project, NAMES, profile, limits(300));
  t.same(second.made, [], 'the next hold makes nothing');
  second.release();
  await new Promise((r) => setTimeout(r, 150));
  t.same(inodes(), made, 'the second release started the linger again');
  await new Promise((r) => setTimeout(r, 600));
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} is gone once the linger passed`);
  t.same(readdirSync(profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'and the registry with them');
});

t.test('what lingers goes when the process exits, long before the linger would pass', async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const other = await holder(sb.project, profile, 600000);
  t.teardown(() => other.kill().catch(() => {}));
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} held by the other process`);
  await other.end();
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} is gone with the process`);
  t.same(readdirSync(profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
});

t.test("a linger that runs out while another process's sandbox holds the project leaves every placeholder to that process", async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const other = await holder(sb.project, profile);
  t.teardown(() => other.kill().catch(() => {}));
  const mine = holdProtected(sb.project, NAMES, profile, limits(50));
  mine.release();
  await new Promise((r) => setTimeout(r, 300));
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} stays after this process's linger ran out: the other one still stands on it`);
  await other.end();
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} goes with the other process's release`);
});

t.test("a start that cannot take the registry's lock fails with SC_SANDBOX_SETUP_FAILED, and the linger it interrupted still ends with the process", async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  // A long linger, so that only the exit can give the claim back; a short wait for the lock, so the failure comes at once.
  const L = { ...limits(600000), placeholder_lock_wait_ms: 50, placeholder_lock_stale_ms: 600000 };
  const code = `const { holdProtected } = require(${JSON.stringify(fileURLToPath(new URL('../../../src/engine/spawn/holds.ts', import.meta.url)))});
const L = ${JSON.stringify(L)};
holdProtected(${JSON.stringify(sb.project)}, ${JSON.stringify(NAMES)}, ${JSON.stringify(profile)}, L).release();
process.stdout.write('lingering\\n');
let step = 0;
process.stdin.on('data', () => {
  if (step++ === 0) {
    // One more protected path, missing: this start has to take the lock to make it.
    try {
      holdProtected(${JSON.stringify(sb.project)}, [...${JSON.stringify(NAMES)}, '.vscode'], ${JSON.stringify(profile)}, L);
      process.stdout.write('started\\n');
    } catch (err) {
      process.stdout.write(JSON.stringify({ code: err.code, message: err.message }) + '\\n');
    }
  } else process.exit(0);
});`;
  const child = spawn(process.execPath, [...TS_REQUIRE, '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const line = async (n: number) => {
    while (out.split('\n').length <= n) {
      if (child.exitCode !== null) throw new Error(`the hold process exited ${child.exitCode}: ${out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return out.split('\n')[n - 1] as string;
  };
  t.equal(await line(1), 'lingering');
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} lingers after the release`);
  // This process holds the registry's lock, as another process of the profile would: the same file, made with O_EXCL.
  const key = createHash('sha256').update(sb.project).digest('hex').slice(0, 32);
  const lock = join(profile, `sandbox-holds.${key}.lock`);
  closeSync(openSync(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600));
  child.stdin.write('try\n');
  const failed = JSON.parse(await line(2));
  t.equal(failed.code, 'SC_SANDBOX_SETUP_FAILED', 'the start fails with its stable code');
  t.match(failed.message, /locked by another process.*nothing was started/);
  t.notOk(existsSync(join(sb.project, '.vscode')), 'nothing new was made');
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} is left as it was`);
  unlinkSync(lock);
  child.stdin.write('exit\n');
  t.equal(await exited, 0);
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} is gone with the process: the interrupted linger was not stranded`);
  t.same(readdirSync(profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
});

/** A process whose one hold lingers (or, with `running`, is still held), with or without a SIGTERM handler of its own. */
function lingerer(project: string, profile: string, opts: { handles: boolean; running: boolean }) {
  const code = `const { holdProtected } = require(${JSON.stringify(fileURLToPath(new URL('../../../src/engine/spawn/holds.ts', import.meta.url)))});
const h = holdProtected(${JSON.stringify(project)}, ${JSON.stringify(NAMES)}, ${JSON.stringify(profile)}, ${JSON.stringify(limits(600000))});
${opts.running ? '' : 'h.release();'}
${opts.handles ? "process.on('SIGTERM', () => process.stdout.write('handled\\\\n'));" : ''}
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, [...TS_REQUIRE, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  const until = async (text: string) => {
    while (!out.includes(text)) {
      if (child.exitCode !== null) throw new Error(`the hold process exited ${child.exitCode}: ${out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { child, exited, until };
}

t.test('a stop signal that ends a process with a lingering claim takes its placeholders first; the process still ends by it', async (t) => {
  const sb = sandbox('sc-holds');
  const profile = profileDir(sb);
  const p = lingerer(sb.project, profile, { handles: false, running: false });
  t.teardown(() => p.child.kill('SIGKILL'));
  await p.until('ready');
  for (const n of NAMES) t.ok(existsSync(join(sb.project, n)), `${n} lingers after the release`);
  p.child.kill('SIGTERM');
  t.same(await p.exited, { code: null, signal: 'SIGTERM' }, 'ended by the signal, as without a hold');
  for (const n of NAMES) t.notOk(existsSync(join(sb.project, n)), `${n} went before it ended`);
  t.same(readdirSync(profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'no claim is left in the registry');
});

t.test('a process that handles the stop signal itself goes on; only what lingers is given back, never what a running sandbox stands on', async (t) => {
  for (const running of [false, true]) {
    const sb = sandbox('sc-holds');
    const profile = profileDir(sb);
    const p = lingerer(sb.project, profile, { handles: true, running });
    t.teardown(() => p.child.kill('SIGKILL'));
    await p.until('ready');
    p.child.kill('SIGTERM');
    await p.until('handled');
    t.equal(p.child.exitCode, null, 'its own handler decides: it runs on');
    for (const n of NAMES) t.equal(existsSync(join(sb.project, n)), running, running ? `${n} stays: a sandbox stands on it` : `${n}, only lingering, is given back`);
    p.child.kill('SIGKILL');
    await p.exited;
  }
});
