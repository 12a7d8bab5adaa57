// The one spawn point opens only for the gate decision that exists to start that kind
// of process, and only once the start is on record. Real processes, real bwrap, a real
// store: a ticket for a read-only tool or for another kind starts nothing, and a spawn
// whose audit row cannot be written (another connection holds the write lock past the
// busy timeout) starts nothing either; each refused start leaves no mark, no spawn row
// and no placeholder in the project, and the same call with the right ticket, or once the
// lock is gone, does start (so the mark would have been there).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { type SpawnKind, SPAWN_ACTIONS, startDirect, startHelper, startOwnProgram, supervise } from '../../../src/engine/spawn/index.js';
import { enforce } from '../../../src/policy/gate.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { readAudit } from '../../../src/store/audit.js';
import type { GateTicket } from '../../../src/ticket.js';
import { trustAsCli } from '../../fixtures/decide.js';
import { alive, connection, ROOT, sandbox, TS_REQUIRE, until, withMarker } from '../../fixtures/env.js';

const MARK = join(ROOT, 'test', 'fixtures', 'mark.mjs');
const PROTECTED = ['.git', '.shadowcode', '.mcp.json', '.claude', '.codex', '.cursor', '.vscode'];

/** This process's children that run the supervisor (started before a start is recorded, so also by a refused one). */
function supervisors(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('supervisor.cjs')) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function setup(t: any, busyMs?: number) {
  const sb = sandbox('sc-spawn');
  const shipped = shippedPolicy();
  // A short busy timeout (the store locked past it), and placeholders given back right after each last sandbox, not a while later.
  const policy = busyMs === undefined ? shipped : ({ ...shipped, limits: { ...shipped.limits, cli: { ...shipped.limits.cli, sqlite_busy_timeout_ms: busyMs }, sandbox: { ...shipped.limits.sandbox, placeholder_linger_ms: 0 } } } as typeof shipped);
  const c = await connection(sb, { policy });
  t.teardown(() => c.close());
  const db = c.engine.db();
  // The gate decides on the stored trust: the project is trusted as `shadowcode trust` leaves it.
  trustAsCli({ policy, db }, sb.project, 'workspace');
  /** A real ticket for `action`, from the gate, as its executor would get it. */
  const ticket = (action: string): Promise<GateTicket> =>
    enforce(
      { policy, db: () => db },
      action.startsWith('cli:')
        ? { action, principal: { kind: 'cli', owner: 'test', allow_write: true, allow_approvals: true }, project: null }
        : { action, principal: { kind: 'engine', owner: 'test', allow_write: true, allow_approvals: false }, project: { path: sb.project, trusted: true, level: 'workspace', network: false }, requested_level: 'workspace', resource: { kind: 'job', id: 'job-x', owner: 'test', project: sb.project } },
      (tk) => tk,
    );
  const spawnRows = () => readAudit(db, { kinds: ['spawn'], limit: 1000 }).map((r) => r.body as { decision_id: string; kind: string });
  return { sb, c, db, policy, ticket, spawnRows };
}

type Env = Awaited<ReturnType<typeof setup>>;

/** Each way in: a start that writes "ran" to `mark` (in the project, which a sandboxed command may write), resolving once the process (if any) is done. */
const starts: Record<string, (e: Env, tk: GateTicket, mark: string) => Promise<unknown>> = {
  'command (supervise)': async (e, tk, mark) => {
    const s = supervise(tk, { kind: 'command', argv: ['sh', '-c', `printf ran > ${mark}`], cwd: e.sb.project, env: { PATH: process.env.PATH ?? '' }, confine: { project: e.sb.project, network: false }, trustedArgv: false, policy: e.policy, db: e.db, graceMs: 1000, stdin: 'ignore' });
    return s.status;
  },
  // With no bwrap on PATH (a machine without the sandbox): the node supervisor is started before the spawn row.
  'command (supervise, no sandbox)': async (e, tk, mark) => {
    const path = process.env.PATH;
    process.env.PATH = join(e.sb.root, 'no-bwrap-here');
    try {
      const s = supervise(tk, { kind: 'command', argv: ['/bin/sh', '-c', `printf ran > ${mark}`], cwd: e.sb.project, env: { PATH: path ?? '' }, confine: { project: e.sb.project, network: false }, trustedArgv: false, policy: e.policy, db: e.db, graceMs: 1000, stdin: 'ignore' });
      if (s.level !== 'none') throw new Error(`started ${s.level}`);
      return s.status;
    } finally {
      process.env.PATH = path;
    }
  },
  'background (startDirect)': async (e, tk, mark) => {
    const { child } = startDirect(tk, { kind: 'background', argv: ['sh', '-c', `printf ran > ${mark}`], cwd: e.sb.project, env: { PATH: process.env.PATH ?? '' }, stdio: 'ignore', confine: { project: e.sb.project, network: false }, trustedArgv: false, policy: e.policy, db: e.db });
    return new Promise((r) => child.once('exit', r));
  },
  'helper (startHelper)': async (e, tk, mark) => {
    writeFileSync(mark, ''); // a helper writes only files it is given, and they must exist
    const { child } = startHelper(tk, { program: MARK, reads: [], writes: [mark], policy: e.policy, db: e.db, stdio: ['pipe', 'ignore', 'ignore'], project: e.sb.project });
    child.stdin!.end(mark);
    return new Promise((r) => child.once('exit', r));
  },
  'engine (startOwnProgram)': async (e, tk, mark) => {
    const child = startOwnProgram(tk, MARK, [mark], { env: { PATH: process.env.PATH ?? '' }, stdio: 'ignore' });
    return new Promise((r) => child.once('exit', r));
  },
};

/** The one action whose ticket starts each way in, and tickets that must not. */
const cases: Array<{ way: string; right: string; wrong: string[] }> = [
  { way: 'command (supervise)', right: 'job:run', wrong: ['tool:shadow_status', 'mcp:connect', 'background:start', 'runner:spawn'] },
  { way: 'background (startDirect)', right: 'background:start', wrong: ['tool:shadow_status', 'job:run', 'cli:model.probe'] },
  { way: 'helper (startHelper)', right: 'tool:shadow_sqlite', wrong: ['tool:shadow_status', 'job:run'] },
  { way: 'engine (startOwnProgram)', right: 'cli:engine.start', wrong: ['cli:engine.stop', 'cli:trust', 'tool:shadow_status'] },
];

const ran = (mark: string) => existsSync(mark) && readFileSync(mark, 'utf8') === 'ran';

t.test('each kind of process has its own actions, and no other action opens it', async (t) => {
  t.same(SPAWN_ACTIONS, {
    command: ['job:run'],
    background: ['background:start'],
    runner: ['runner:spawn'],
    mcp_server: ['mcp:connect'],
    probe: ['cli:model.list', 'cli:model.probe'],
    helper: ['tool:shadow_sqlite'],
    engine: ['cli:engine.start'],
  } satisfies Record<SpawnKind | 'helper' | 'engine', readonly string[]>);
});

for (const c of cases) {
  t.test(`${c.way}: a ticket for any other action starts nothing (SC_TICKET_REFUSED, no spawn row, no mark, no placeholder)`, async (t) => {
    const e = await setup(t);
    for (const action of c.wrong) {
      const mark = join(e.sb.project, `wrong-${action.replace(/[^a-z]/g, '_')}`);
      const before = e.spawnRows().length;
      const tk = await e.ticket(action);
      let err: any;
      try {
        await starts[c.way]!(e, tk, mark);
      } catch (x) {
        err = x;
      }
      t.equal(err?.code, 'SC_TICKET_REFUSED', `a ${action} ticket is refused`);
      t.match(err?.message, new RegExp(`called with a ticket for ${action.replace(/[.]/g, '\\.')}; nothing was done`));
      t.equal(e.spawnRows().length, before, `no spawn row for the ${action} ticket`);
      t.notOk(ran(mark), `no process ran for the ${action} ticket`);
      for (const name of PROTECTED) t.notOk(existsSync(join(e.sb.project, name)), `${name}: no placeholder left in the project`);
    }
    // The same start with its own ticket does run, and is recorded: the refusals above were the ticket's doing.
    const mark = join(e.sb.project, 'right');
    const tk = await e.ticket(c.right);
    await starts[c.way]!(e, tk, mark);
    await until(() => ran(mark), 20000);
    t.ok(ran(mark), `a ${c.right} ticket starts it`);
    if (c.way !== 'engine (startOwnProgram)') t.equal(e.spawnRows().filter((r) => r.decision_id === tk.decisionId).length, 1, 'with one spawn row naming its decision');
  });
}

t.test('a ticket minted outside the gate opens nothing', async (t) => {
  const e = await setup(t);
  const forged = { decisionId: 'forged', action: 'job:run', ceiling: 'workspace', owner: 'test' } as const;
  const mark = join(e.sb.project, 'forged');
  await t.rejects(starts['command (supervise)']!(e, forged, mark), { code: 'SC_TICKET_REFUSED', message: /no ticket the gate minted/ });
  t.same(e.spawnRows(), [], 'no spawn row');
  t.notOk(existsSync(mark));
});

for (const way of ['command (supervise)', 'command (supervise, no sandbox)', 'background (startDirect)', 'helper (startHelper)'] as const) {
  t.test(`${way}: while the spawn row cannot be written, nothing starts and the caller gets SC_STORE_FAILED`, async (t) => {
    const busyMs = 150;
    const e = await setup(t, busyMs);
    const right = way === 'command (supervise, no sandbox)' ? 'job:run' : cases.find((c) => c.way === way)!.right;
    const tk = await e.ticket(right);
    const before = e.spawnRows().length;
    // Another connection to the same store holds a write transaction past the busy timeout.
    const holder = new Database(join(e.sb.profile, 'state.db'));
    t.teardown(() => holder.close());
    holder.exec('BEGIN IMMEDIATE');
    const mark = join(e.sb.project, 'while-locked');
    const err = await starts[way]!(e, tk, mark).then(
      () => undefined,
      (x) => x,
    );
    holder.exec('ROLLBACK');
    t.equal(err?.code, 'SC_STORE_FAILED', `refused: ${err?.message}`);
    t.match(err?.message, /was not started: its spawn row could not be recorded: database is locked/);
    for (const name of PROTECTED) t.notOk(existsSync(join(e.sb.project, name)), `${name}: the placeholder was given back`);
    // Unsandboxed, the supervisor is started before the spawn row: refused, it is given no spec and ends on its own.
    // Sandboxed, none is started at all.
    if (way.startsWith('command')) await until(() => supervisors().length === 0, 10000).then(() => t.pass('the supervisor started for it has ended'), () => t.fail(`supervisors still running: ${supervisors().join(' ')}`));
    // Once the lock is gone the same start runs: had the first one started, its mark would be there by now.
    const after = join(e.sb.project, 'after-unlock');
    await starts[way]!(e, tk, after);
    await until(() => ran(after), 20000);
    t.notOk(ran(mark), 'the start refused under the lock never ran');
    t.equal(e.spawnRows().length, before + 1, 'one spawn row: the start that ran');
  });
}

t.test('a sandboxed command is supervised by its owner: bwrap is the process, no node supervisor runs beside it, and a stop ends it through its TERM handler', async (t) => {
  const e = await setup(t);
  const tk = await e.ticket('job:run');
  const ready = join(e.sb.project, 'ready');
  const s = supervise(tk, { kind: 'command', argv: ['sh', '-c', `trap 'echo bye; exit 7' TERM; sleep 60 & printf up > ${ready}; wait`], cwd: e.sb.project, env: { PATH: process.env.PATH ?? '' }, confine: { project: e.sb.project, network: false }, trustedArgv: false, policy: e.policy, db: e.db, graceMs: 5000, stdin: 'ignore' });
  t.teardown(() => s.stop());
  let out = '';
  s.process.stdout?.on('data', (d) => (out += d));
  t.equal(s.level, 'bwrap');
  const pid = await s.pid;
  t.equal(pid, s.process.pid, 'the leader is the process the caller holds');
  t.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0], /bwrap$/, 'and it is bwrap');
  await until(() => existsSync(ready), 20000);
  t.same(supervisors(), [], 'no supervisor process was started for it');
  s.stop();
  s.stop();
  const st = await s.status;
  t.match(st, { why: 'closed', outcome: 'terminated', stopped: true, code: 7, signal: null, error: null }, 'its own TERM handler ended it within the grace');
  t.equal(out, 'bye\n', 'and what it printed on the way out reached the caller before the status');
  t.notOk(existsSync(`/proc/${pid}`), 'bwrap is gone');
});

t.test('a sandboxed command that ignores TERM is killed after the grace; one that ends by itself just exits', async (t) => {
  const e = await setup(t);
  const run = async (script: string, graceMs: number, stop: boolean) => {
    const tk = await e.ticket('job:run');
    const ready = join(e.sb.project, `ready-${graceMs}-${stop}`);
    const s = supervise(tk, { kind: 'command', argv: ['sh', '-c', `${script} printf up > ${ready}; wait`], cwd: e.sb.project, env: { PATH: process.env.PATH ?? '' }, confine: { project: e.sb.project, network: false }, trustedArgv: false, policy: e.policy, db: e.db, graceMs, stdin: 'ignore' });
    t.teardown(() => s.stop());
    await until(() => existsSync(ready) || !s.process.pid, 20000);
    if (stop) s.stop();
    return s.status;
  };
  t.match(await run("trap '' TERM; sleep 60 &", 200, true), { why: 'closed', outcome: 'killed', stopped: true, code: null, signal: 'SIGKILL' }, 'KILLed once the grace was over');
  const own = await run('true;', 5000, false);
  t.match(own, { why: 'leader_exited', outcome: 'exited', stopped: false, code: 0, signal: null, error: null }, 'ended by itself: exited, its own status');
  t.ok(own.duration_ms >= 0);
});


t.test('an owner killed the moment it started a sandboxed command leaves nothing running: the command waits at the gate and never starts', async (t) => {
  const sb = sandbox('sc-gate');
  mkdirSync(sb.profile, { recursive: true, mode: 0o700 });
  const src = (rel: string) => JSON.stringify(fileURLToPath(new URL(`../../../src/${rel}`, import.meta.url)));
  const marker = `gate-${process.pid}-${Date.now()}`;
  const mark = join(sb.project, 'ran');
  // The owner: a real gate decision, the start, its bwrap's pid on stdout, and SIGKILL before its event loop
  // turns once, so before bwrap can have tied itself to it (bwrap does that only once the sandbox is made).
  const code = `const { openDb } = require(${src('store/db.ts')});
const { shippedPolicy } = require(${src('policy/load.ts')});
const { enforce } = require(${src('policy/gate.ts')});
const { supervise } = require(${src('engine/spawn/index.ts')});
const { trustAsCli } = require(${JSON.stringify(fileURLToPath(new URL('../../fixtures/decide.ts', import.meta.url)))});
const project = ${JSON.stringify(sb.project)};
const policy = shippedPolicy();
const db = openDb(${JSON.stringify(sb.profile)}, 5000);
trustAsCli({ policy, db }, project, 'workspace');
enforce({ policy, db: () => db }, { action: 'job:run', principal: { kind: 'engine', owner: 'test', allow_write: true, allow_approvals: false }, project: { path: project, trusted: true, level: 'workspace', network: false }, requested_level: 'workspace', resource: { kind: 'job', id: 'job-x', owner: 'test', project } }, (tk) => {
  const s = supervise(tk, { kind: 'command', argv: ['sh', '-c', 'echo ran > ${mark}; exec sleep 30 ${marker}'], cwd: project, env: { PATH: process.env.PATH }, confine: { project, network: false }, trustedArgv: false, policy, db, graceMs: 1000, stdin: 'ignore' });
  process.stdout.write(s.level + ' ' + s.process.pid + '\\n');
  process.kill(process.pid, 'SIGKILL');
});`;
  const owner = spawn(process.execPath, [...TS_REQUIRE, '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  owner.stdout.on('data', (d) => (out += d));
  owner.stderr.on('data', (d) => (err += d));
  const signal = await new Promise<NodeJS.Signals | null>((r) => owner.on('close', (_c, s) => r(s)));
  t.equal(signal, 'SIGKILL', `the owner was killed: ${err}`);
  const [level, pid] = out.trim().split(' ');
  t.equal(level, 'bwrap', 'the command was started sandboxed');
  t.ok(Number(pid) > 0, 'bwrap was forked before the owner died');
  // Whatever bwrap had done by then, it ends: the gate reads the owner's end of its socket closed.
  await until(() => !alive(Number(pid)) && withMarker(marker).length === 0, 15000).catch(() => {});
  t.notOk(alive(Number(pid)), 'bwrap is gone');
  t.same(withMarker(marker), [], 'nothing of the command runs');
  t.notOk(existsSync(mark), 'the command never started');
});
