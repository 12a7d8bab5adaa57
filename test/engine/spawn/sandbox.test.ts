// The OS sandbox around every process the engine starts, with a real bwrap and real
// processes: an approved command run by a scripted task cannot read the profile's
// secrets, the engine's /proc, a loopback listener or write .git/config; a stdio MCP
// server runs sandboxed too; without bwrap on PATH everything says "unsandboxed" and
// sandbox.require refuses. These tests fail, never skip, when bwrap cannot be made.
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Message } from '../../../src/agent/types.js';
import { describeAction } from '../../../src/cli/output.js';
import { openTarget } from '../../../src/client/open.js';
import { enabledTargets } from '../../../src/client/targets.js';
import { diagnose } from '../../../src/engine/doctor.js';
import { pendingApprovals } from '../../../src/engine/jobs.js';
import { sandboxSupport, supervise } from '../../../src/engine/spawn/index.js';
import { sandboxArgv, startupRoots } from '../../../src/engine/spawn/sandbox.js';
import { enforce } from '../../../src/policy/gate.js';
import { loadPolicy, type Policy, shippedPolicy } from '../../../src/policy/load.js';
import { readAudit } from '../../../src/store/audit.js';
import { type AgentBench, agentBench, type Scripted, scripted } from '../../fixtures/agent.js';
import { decideAsCli } from '../../fixtures/decide.js';
import { fields } from '../../fixtures/exact.js';
import { cli, ROOT, spawnCli, until } from '../../fixtures/env.js';
import { grant, peerDef, processesWith, world } from '../../fixtures/mcp-client.js';
import { withSandboxLimits } from '../../fixtures/sandboxed.js';

t.test('bwrap can make a sandbox on this machine (the tests below need it)', async (t) => {
  const s = sandboxSupport();
  t.equal(s.level, 'bwrap', `no sandbox: ${s.detail}`);
});

/** Runs one approved `sh -c script` in a task's project; returns what the model got back, the approval and the spawn rows. */
async function approvedCommand(t: any, script: (project: string, profile: string) => string, o: { network?: boolean; policy?: Policy; setup?: (b: AgentBench) => Promise<void> | void } = {}) {
  let model: Scripted | undefined;
  const b = await agentBench(() => model as Scripted, o.policy ? { policy: o.policy } : {});
  t.teardown(() => b.close());
  if (o.network) await cli(b.sb, ['--project', b.sb.project, 'trust', '--network']);
  await o.setup?.(b);
  model = scripted([{ calls: [{ name: 'run_command', arguments: { argv: ['sh', '-c', script(b.sb.project, b.sb.profile)] } }] }, { calls: [{ name: 'finish', arguments: { summary: 'ran' } }] }]);
  const job = b.submit('run it');
  const db = b.engine.db();
  await until(() => pendingApprovals(db, { project: b.sb.project, jobId: job.id }).length === 1, 30000);
  const [a] = pendingApprovals(db, { project: b.sb.project, jobId: job.id });
  decideAsCli({ policy: b.engine.policy, db }, a!.id, 'approved');
  b.engine.jobs().sync();
  await b.settle(job.id, 60000);
  const results = model.requests.at(-1)!.messages.filter((m) => m.role === 'tool') as Array<Extract<Message, { role: 'tool' }>>;
  return { b, approval: a!, result: results[0]!.content, spawns: readAudit(db, { kinds: ['spawn'], limit: 100 }).map((r) => r.body as Record<string, unknown>) };
}

t.test("an approved command cannot read the profile's secrets, the engine's /proc, or write .git/config; the project stays writable", async (t) => {
  const canary = `secret-canary-${process.pid}-value`;
  const { result, spawns, b } = await approvedCommand(
    t,
    (project, profile) =>
      [
        `cat ${profile}/secrets.json && echo READ-SECRETS || echo NO-SECRETS`,
        `ls ${profile} >/dev/null 2>&1 && echo SEE-PROFILE || echo NO-PROFILE`,
        `cat /proc/${process.pid}/environ >/dev/null 2>&1 && echo READ-ENGINE-ENVIRON || echo NO-ENGINE-ENVIRON`,
        `cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -c -e SHADOWCODE_HOME -e TAP_CHILD_ID || true`,
        `(echo '[core] fsmonitor = evil' >> ${project}/.git/config) 2>/dev/null && echo WROTE-GIT || echo NO-GIT`,
        `echo fine > ${project}/made.txt && echo WROTE-PROJECT`,
        `ls ${join(ROOT, 'src')} >/dev/null 2>&1 && echo SEE-OTHER-DIRS || echo NO-OTHER-DIRS`,
      ].join('; '),
    {
      setup: async (b) => {
        mkdirSync(join(b.sb.project, '.git'));
        writeFileSync(join(b.sb.project, '.git', 'config'), '[core]\n');
        t.equal((await cli(b.sb, ['secret', 'set', 'SC_CANARY'], canary)).code, 0, 'a secret is stored');
        t.ok(existsSync(join(b.sb.profile, 'secrets.json')), 'secrets.json exists outside the sandbox');
      },
    },
  );
  t.match(result, /NO-SECRETS/, 'secrets.json cannot be read');
  t.notMatch(result, new RegExp(`^READ-SECRETS$|${canary}`, 'm'), 'nothing of it reached the model');
  t.match(result, /NO-PROFILE/, 'the profile directory is not visible');
  t.match(result, /NO-ENGINE-ENVIRON/, "the engine's /proc entry is not in the command's PID namespace");
  t.match(result, /^0$/m, "the parent's environ holds no variable the environment policy filters out");
  t.match(result, /NO-GIT/, '.git/config is read-only');
  t.equal(readFileSync(join(b.sb.project, '.git', 'config'), 'utf8'), '[core]\n', '.git/config is unchanged');
  t.match(result, /WROTE-PROJECT/);
  t.equal(readFileSync(join(b.sb.project, 'made.txt'), 'utf8'), 'fine\n', 'the project itself is writable');
  t.match(result, /NO-OTHER-DIRS/, 'directories outside the project and the system are not visible');
  t.same(fields(spawns, ['kind', 'level', 'network', 'argv0']), [{ kind: 'command', level: 'bwrap', network: false, argv0: 'sh' }], 'one spawn row, and it records the sandbox');
});

async function listener(t: any): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const server: Server = createServer((s) => {
    n++;
    s.on('error', () => {});
    s.end('hello\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  return { port: (server.address() as { port: number }).port, connections: () => n };
}

const connectScript = (port: number) => `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('CONNECTED'); process.exit(0) }).on('error', (e) => { console.log('NO-CONNECT ' + e.code); process.exit(1) })"`;

t.test('without network permission a command cannot reach a loopback listener outside; with it, it can', async (t) => {
  const off = await listener(t);
  const denied = await approvedCommand(t, () => connectScript(off.port));
  t.match(denied.result, /NO-CONNECT/, denied.result);
  t.notMatch(denied.result, /^CONNECTED$/m);
  t.equal(off.connections(), 0, 'the listener saw no connection');
  const on = await listener(t);
  const allowed = await approvedCommand(t, () => connectScript(on.port), { network: true });
  t.match(allowed.result, /^CONNECTED$/m, 'the project\'s network permission opens the network');
  t.same(fields(allowed.spawns, ['kind', 'level', 'network']), [{ kind: 'command', level: 'bwrap', network: true }]);
});

t.test('a stdio MCP server runs in the sandbox, recorded in the audit log', async (t) => {
  const w = await world();
  await grant(w, 'peer', peerDef('ok'));
  const target = enabledTargets(w.db, w.sb.project, w.policy, w.secrets).find((x) => x.def.name === 'peer')!;
  // mcp enable started it once to read its catalog; what follows is the connection's own start.
  const afterSeq = readAudit(w.db, { limit: 1000 }).at(-1)?.seq ?? 0;
  const o = await openTarget(w.deps, { principal: { kind: 'engine', owner: 'test:owner', allow_write: true, allow_approvals: false }, project: { path: w.sb.project, trusted: true, level: 'workspace', network: false }, requested_level: 'workspace' }, w.sb.project, target, new AbortController().signal);
  t.ok(o.catalog.length > 0, 'the sandboxed server answered discovery');
  await o.conn.close();
  t.same(fields(readAudit(w.db, { kinds: ['spawn'], afterSeq, limit: 10 }).map((r) => r.body), ['kind', 'level', 'network', 'argv0']), [{ kind: 'mcp_server', level: 'bwrap', network: false, argv0: process.execPath }], 'one spawn row for the connection: the server, sandboxed');
  t.same(fields(readAudit(w.db, { kinds: ['spawn'], limit: 10 }).map((r) => r.body), ['kind', 'level']), [{ kind: 'mcp_server', level: 'bwrap' }, { kind: 'mcp_server', level: 'bwrap' }], 'and the catalog review at mcp enable ran it sandboxed too: no other start');
});

/** A PATH without bwrap: the engine finds no sandbox. */
async function withoutBwrap<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = '/nonexistent-bin';
  try {
    return await fn();
  } finally {
    process.env.PATH = saved;
  }
}

t.test('without bwrap on PATH: status, doctor and the approval say "unsandboxed", and the command still runs', async (t) => {
  const r = await withoutBwrap(async () => {
    const { approval, result, spawns, b } = await approvedCommand(t, () => 'echo ran-bare');
    const status = JSON.parse((await cli(b.sb, ['--json', 'status'])).stdout);
    const text = (await cli(b.sb, ['status'])).stdout;
    const checks = diagnose({ profileDir: b.sb.profile, project: b.sb.project, db: b.engine.db(), policy: b.policy, settings: () => b.engine.settings(), secrets: b.engine.secrets(), env: b.sb.env });
    return { approval, result, spawns, status, text, checks, sb: b.sb };
  });
  t.match(r.approval.action, { unsandboxed: true }, 'the approval record says so');
  t.match(describeAction('command', r.approval.action), /unsandboxed/, 'so does its text');
  t.match(r.result, /ran-bare/, 'the command ran as before');
  t.same(fields(r.spawns, ['kind', 'level']), [{ kind: 'command', level: 'none' }], 'one spawn row, and it records no sandbox');
  t.match(r.status.sandbox, { level: 'none', label: 'unsandboxed', require: false, detail: /bwrap is not on PATH/ });
  t.match(r.text, /^sandbox\s+unsandboxed/m);
  t.match(r.checks.find((c) => c.id === 'sandbox'), { status: 'warn', detail: /^unsandboxed/ });
  // The CLI as a real process, with a PATH lacking bwrap and with this process's own, in the same project
  // (its environment was taken while PATH lacked bwrap, so each run says which PATH it gets).
  const [bare, boxed] = await Promise.all([spawnCli(r.sb, ['--json', 'status'], '', { PATH: '/nonexistent-bin' }), spawnCli(r.sb, ['--json', 'status'], '', { PATH: process.env.PATH })]);
  t.match(JSON.parse(bare.stdout).sandbox, { label: 'unsandboxed' });
  t.match(JSON.parse(boxed.stdout).sandbox, { level: 'bwrap', label: 'sandboxed' });
});

t.test('sandbox.require refuses to start a command when no sandbox can be made', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sc-policy-'));
  cpSync(join(ROOT, 'policy'), dir, { recursive: true });
  const sp = JSON.parse(readFileSync(join(dir, 'sandbox.json'), 'utf8'));
  writeFileSync(join(dir, 'sandbox.json'), JSON.stringify({ ...sp, require: true }));
  const policy = loadPolicy(dir);
  const r = await withoutBwrap(async () => {
    const out = await approvedCommand(t, (project) => `touch ${project}/ran`, { policy });
    const checks = diagnose({ profileDir: out.b.sb.profile, project: out.b.sb.project, db: out.b.engine.db(), policy, settings: () => out.b.engine.settings(), secrets: out.b.engine.secrets(), env: out.b.sb.env });
    return { ...out, checks };
  });
  t.match(r.result, /SC_SANDBOX_UNAVAILABLE/, r.result);
  t.notOk(existsSync(join(r.b.sb.project, 'ran')), 'nothing ran');
  t.same(r.spawns, [], 'no spawn happened');
  t.match(r.checks.find((c) => c.id === 'sandbox'), { status: 'fail', detail: /requires one/ });
  // With bwrap present the same policy runs it, sandboxed.
  const ok = await approvedCommand(t, (project) => `touch ${project}/ran`, { policy });
  t.ok(existsSync(join(ok.b.sb.project, 'ran')));
  t.same(fields(ok.spawns, ['level']), [{ level: 'bwrap' }]);
});

const PROTECTED = ['.git', '.shadowcode', '.mcp.json', '.claude', '.codex', '.cursor', '.vscode'];

/** The shipped policy, with the placeholders given back 100 ms after a project's last sandbox (3 s shipped). */
const SHORT_LINGER = withSandboxLimits({ placeholder_linger_ms: 100 });
const gone = (project: string) => () => PROTECTED.every((name) => !existsSync(join(project, name)));

t.test('an approved command cannot create a protected path that does not exist yet, and nothing is left behind', async (t) => {
  const { result, b } = await approvedCommand(t, (project) =>
    [
      `cd ${project}`,
      `(mkdir -p .claude && echo '{"hooks":{}}' > .claude/settings.json) 2>/dev/null && echo WROTE-CLAUDE || echo NO-CLAUDE`,
      `git init -q . >/dev/null 2>&1 && echo GIT-INIT || echo NO-GIT-INIT`,
      `(echo '[core] fsmonitor = evil' > .git/config) 2>/dev/null && echo WROTE-GIT || echo NO-GIT`,
      `(echo '{}' > .mcp.json) 2>/dev/null && echo WROTE-MCP || echo NO-MCP`,
      `(rm -rf .claude .vscode && mkdir .vscode && echo x > .vscode/tasks.json) 2>/dev/null && echo WROTE-VSCODE || echo NO-VSCODE`,
      `(mv .codex elsewhere) 2>/dev/null && echo MOVED-CODEX || echo NO-MOVE`,
      `echo fine > made.txt && mkdir -p src && echo code > src/a.txt && echo WROTE-PROJECT`,
    ].join('; '),
    { policy: SHORT_LINGER },
  );
  for (const word of ['NO-CLAUDE', 'NO-GIT-INIT', 'NO-GIT', 'NO-MCP', 'NO-VSCODE', 'NO-MOVE', 'WROTE-PROJECT']) t.match(result, new RegExp(`^${word}$`, 'm'), `${word}: ${result}`);
  await until(gone(b.sb.project), 10000).catch(() => {});
  for (const name of PROTECTED) t.notOk(existsSync(join(b.sb.project, name)), `${name} is not in the project afterwards (no leftover placeholder)`);
  t.notOk(existsSync(join(b.sb.project, 'elsewhere')));
  t.equal(readFileSync(join(b.sb.project, 'made.txt'), 'utf8'), 'fine\n', 'a normal write to the project still works');
  t.equal(readFileSync(join(b.sb.project, 'src', 'a.txt'), 'utf8'), 'code\n');
  t.same(readdirSync(b.sb.profile).filter((f) => f.startsWith('sandbox-holds.')), [], 'the registry of placeholders is gone again');
});

t.test('the placeholders stay a while after the last sandbox for the next start to stand on, then go', async (t) => {
  const b = await agentBench(() => scripted([]), { policy: withSandboxLimits({ placeholder_linger_ms: 2000 }) });
  t.teardown(() => b.close());
  const project = b.sb.project;
  const ids = () => PROTECTED.map((name) => lstatSync(join(project, name), { throwIfNoEntry: false })?.ino ?? null);
  const first = await boxedShell(t, b, 'true');
  await first.s.created;
  const held = ids();
  t.notOk(held.includes(null), 'every placeholder is still there right after the sandbox ended');
  const again = await boxedShell(t, b, 'echo again > again.txt');
  await again.s.created;
  t.equal(readFileSync(join(project, 'again.txt'), 'utf8'), 'again\n', 'the next command ran');
  t.same(ids(), held, 'it stood on the same placeholders: none was removed and made again');
  await until(gone(project), 15000).catch(() => {});
  for (const name of PROTECTED) t.notOk(existsSync(join(project, name)), `${name} is gone once the linger passed`);
});

/**
 * A sandboxed `sh -c script` under the supervisor in the bench's project, started through the one spawn
 * point with the ticket a command needs (job:run, as an approved command's); stopped at the test's end,
 * so a failed wait leaves nothing running.
 */
async function boxedShell(t: any, b: AgentBench, script: string) {
  const ticket = await enforce(
    { policy: b.policy, db: () => b.engine.db() },
    { action: 'job:run', principal: { kind: 'engine', owner: 'test', allow_write: true, allow_approvals: false }, project: { path: b.sb.project, trusted: true, level: 'workspace', network: false }, requested_level: 'workspace', resource: { kind: 'job', id: 'boxed-shell', owner: 'test', project: b.sb.project } },
    (tk) => tk,
  );
  const s = supervise(ticket, { kind: 'command', argv: ['sh', '-c', script], cwd: b.sb.project, env: { PATH: process.env.PATH ?? '', HOME: b.sb.root }, confine: { project: b.sb.project, network: false }, trustedArgv: false, policy: b.policy, db: b.engine.db(), graceMs: 1000, stdin: 'pipe' });
  t.teardown(async () => {
    s.process.stdin?.destroy();
    s.stop();
    await s.status;
  });
  let out = '';
  s.process.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  return { s, out: () => out };
}

t.test("a stopped command's own TERM handler runs within the grace and its status is the command's; what it left running ends with it", async (t) => {
  const b = await agentBench(() => scripted([]));
  t.teardown(() => b.close());
  const mark = `left-running-${process.pid}-${Date.now()}`;
  const stopped = await boxedShell(t, b, `trap 'echo cleaned > cleaned.txt; exit 5' TERM; echo up; sleep 60 & wait`);
  await until(() => stopped.out().includes('up\n'));
  stopped.s.stop();
  t.match(await stopped.s.status, { outcome: 'terminated', code: 5, signal: null }, 'TERM reached the command, not the sandbox: it ended on its own, with its own status');
  t.equal(readFileSync(join(b.sb.project, 'cleaned.txt'), 'utf8'), 'cleaned\n', 'its handler ran');
  // Left behind in a session of their own and as an orphan: nothing outside the sandbox's PID namespace waits for them.
  const ended = await boxedShell(t, b, `setsid sh -c 'touch a.up; sleep 60; : ${mark}-a' & (sh -c 'touch b.up; sleep 60; : ${mark}-b' &); until [ -e a.up ] && [ -e b.up ]; do sleep 0.05; done`);
  t.match(await ended.s.status, { outcome: 'exited', code: 0 }, 'the command itself ended');
  t.ok(existsSync(join(b.sb.project, 'a.up')) && existsSync(join(b.sb.project, 'b.up')), 'both had started');
  t.same(processesWith(mark), [], 'what it left running was gone by the time its status was reported');
  const signalled = await boxedShell(t, b, 'kill -SEGV $$');
  t.match(await signalled.s.status, { outcome: 'exited', code: 139 }, 'a command that died of a signal reports 128 + its number');
});

t.test('two sandboxes in one project: the first to end leaves the placeholders the other stands on; the last removes them', async (t) => {
  const b = await agentBench(() => scripted([]), { policy: SHORT_LINGER });
  t.teardown(() => b.close());
  const project = b.sb.project;
  // The first waits for a line, then tries to write where a protected path was missing.
  const first = await boxedShell(t, b, `read go; (mkdir -p .claude; echo x > .claude/settings.json) 2>/dev/null && echo FIRST-WROTE || echo FIRST-REFUSED`);
  await first.s.pid;
  await until(() => existsSync(join(project, '.claude')), 10000);
  const second = await boxedShell(t, b, 'echo second > second.txt');
  await second.s.status;
  t.equal(readFileSync(join(project, 'second.txt'), 'utf8'), 'second\n', 'the second ran');
  for (const name of PROTECTED) t.ok(existsSync(join(project, name)), `${name} is still held while the first runs`);
  first.s.process.stdin!.end('go\n');
  await first.s.status;
  t.match(first.out(), /^FIRST-REFUSED$/m, 'the first still could not write .claude/settings.json after the second ended');
  await until(gone(project), 10000).catch(() => {});
  for (const name of PROTECTED) t.notOk(existsSync(join(project, name)), `${name} is gone once the last sandbox ended`);
});

t.test('a placeholder someone filled meanwhile, and an empty folder of the user\'s own, are never removed', async (t) => {
  const b = await agentBench(() => scripted([]), { policy: SHORT_LINGER });
  t.teardown(() => b.close());
  const project = b.sb.project;
  mkdirSync(join(project, '.vscode')); // the user's own, empty
  const run = await boxedShell(t, b, 'read go; echo done');
  await until(() => existsSync(join(project, '.git')), 10000);
  // The user runs `git init` in another terminal while the command runs.
  mkdirSync(join(project, '.git', 'objects'), { recursive: true });
  writeFileSync(join(project, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  run.s.process.stdin!.end('go\n');
  await run.s.status;
  await until(() => !existsSync(join(project, '.claude')), 10000).catch(() => {});
  t.equal(readFileSync(join(project, '.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n', "the user's new .git stays");
  t.ok(existsSync(join(project, '.vscode')), "the user's empty .vscode stays");
  t.notOk(existsSync(join(project, '.claude')), 'an untouched placeholder went');
});

t.test('what in a writable tool_state configures later unsandboxed runs is bound read-only on top, where it can be', async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-state-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, 'home');
  const state = join(home, '.tool');
  mkdirSync(join(state, 'hooks'), { recursive: true });
  writeFileSync(join(state, 'settings.json'), '{}');
  symlinkSync(join(root, 'dotfiles.toml'), join(state, 'linked.toml'));
  mkdirSync(join(home, '.elsewhere'));
  writeFileSync(join(home, '.elsewhere', 'config'), '');
  const sp = shippedPolicy().sandbox;
  const policy = {
    ...sp,
    tool_state: { tool: ['~/.tool'] },
    tool_state_read_only: { tool: ['~/.tool/settings.json', '~/.tool/hooks', '~/.tool/missing.json', '~/.tool/linked.toml', '~/.elsewhere/config'] },
  };
  const argv = sandboxArgv({ argv: ['/bin/true'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: false, profileDir: null, policy, stateKeys: ['tool'] });
  const at = (a: string) => argv.join(' ').indexOf(a);
  t.ok(at(`--bind ${state} ${state}`) >= 0, 'the state folder is writable');
  for (const p of [join(state, 'settings.json'), join(state, 'hooks')]) {
    t.ok(at(`--ro-bind ${p} ${p}`) > at(`--bind ${state} ${state}`), `${p} is read-only, mounted after the folder`);
  }
  t.notMatch(argv.join(' '), 'missing.json', 'a missing one cannot be covered (the runner reports it if it appears)');
  t.notMatch(argv.join(' '), 'linked.toml', 'nor a link');
  t.notMatch(argv.join(' '), '.elsewhere', 'a path outside every writable state folder needs nothing: the private home hides it');
  const other = sandboxArgv({ argv: ['/bin/true'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: false, profileDir: null, policy, stateKeys: ['other'] });
  t.notMatch(other.join(' '), state, "another command's state is neither writable nor bound");

  // A private file: a copy bound in its place when there is one, else the file read-only.
  writeFileSync(join(home, '.tool.json'), '{}');
  const priv = { ...policy, tool_state_private: { tool: ['~/.tool.json', '~/.absent.json'] } };
  const base = { argv: ['/bin/true'], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: false, profileDir: null, policy: priv, stateKeys: ['tool'] };
  t.match(sandboxArgv(base).join(' '), `--ro-bind ${join(home, '.tool.json')} ${join(home, '.tool.json')}`, 'without a copy: read-only');
  const copy = join(root, 'copy.json');
  t.match(sandboxArgv({ ...base, copies: new Map([[join(home, '.tool.json'), copy]]) }).join(' '), `--bind ${copy} ${join(home, '.tool.json')}`, 'with one: the copy, read-write');
  t.notMatch(sandboxArgv(base).join(' '), '.absent.json', 'a missing one is not made');

  // For real: a write to the protected file fails, one beside it lands.
  const b = sandboxSupport().bwrap;
  if (!b) throw new Error('bwrap is needed here (apt-get install -y bubblewrap)');
  const real = spawnSync(b, sandboxArgv({ argv: ['/bin/sh', '-c', `echo x >> ${join(state, 'settings.json')} 2>/dev/null && echo WROTE || echo REFUSED; echo y > ${join(state, 'log.txt')} && echo LOGGED`], cwd: root, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: b, trusted: true, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: false, profileDir: null, policy, stateKeys: ['tool'] }).slice(1), { encoding: 'utf8' });
  t.match(real.stdout, /^REFUSED\nLOGGED\n$/, real.stderr);
  t.equal(readFileSync(join(state, 'settings.json'), 'utf8'), '{}');
  t.equal(readFileSync(join(state, 'log.txt'), 'utf8'), 'y\n');
});

t.test("what a user's own program may see: a linked node_modules only when it is one, and a tool_state entry never the home itself", async (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sc-roots-')));
  const home = join(root, 'home');
  const shared = join(root, 'main', 'node_modules');
  const keys = join(home, '.ssh');
  for (const d of [home, shared, keys, join(root, 'wt'), join(root, 'evil'), join(home, '.tool')]) mkdirSync(d, { recursive: true });
  for (const [pkg, link] of [['wt', shared], ['evil', keys]] as const) {
    writeFileSync(join(root, pkg, 'package.json'), '{}');
    writeFileSync(join(root, pkg, 'cli.mjs'), '#!/bin/sh\n');
    symlinkSync(link, join(root, pkg, 'node_modules'));
  }
  const sp = shippedPolicy().sandbox;
  const env = { HOME: home, PATH: '/usr/bin:/bin' };
  t.ok(startupRoots([join(root, 'wt', 'cli.mjs')], root, env, sp, true).includes(shared), "a worktree's linked install is readable");
  t.notOk(startupRoots([join(root, 'evil', 'cli.mjs')], root, env, sp, true).includes(keys), 'a link named node_modules to any other folder is not followed');
  const argv = sandboxArgv({
    argv: [join(root, 'wt', 'cli.mjs')], cwd: root, env, bwrap: '/usr/bin/bwrap', trusted: true, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: true, profileDir: null,
    policy: { ...sp, tool_state: { tool: ['~', '~/..', '~/.tool', '~/.missing'] } }, stateKeys: ['tool'], writable: [join(root, 'run')], readable: [shared],
  }).join(' ');
  t.match(argv, `--bind ${join(home, '.tool')} ${join(home, '.tool')}`, 'an existing state folder is bound read-write');
  t.notMatch(argv, `--bind ${home} `, 'the home itself never is');
  t.notMatch(argv, `--bind ${root} `, 'nor a folder above it');
  t.notMatch(argv, '.missing', 'a missing one is not created');
  t.notMatch(argv, join(root, 'run'), 'a writable folder that does not exist is not bound');
});

t.test('a system file to hide that appears while shadowcode runs is covered from the next start on', async (t) => {
  // Not below /tmp: the sandbox's own /tmp would be mounted over it.
  const root = realpathSync(mkdtempSync('/var/tmp/sc-syshidden-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const etc = join(root, 'etc');
  mkdirSync(join(etc, 'ssh'), { recursive: true });
  const sp = shippedPolicy().sandbox;
  // A system folder of our own, shown read-only, with a host-key pattern and a keytab in it to hide.
  const policy = { ...sp, system_read_only: [...sp.system_read_only, etc], system_hidden: [join(etc, 'ssh', '*_key'), join(etc, 'krb5.keytab')] };
  const line = () => sandboxArgv({ argv: ['/bin/true'], cwd: root, env: { HOME: join(root, 'home'), PATH: '/usr/bin:/bin' }, bwrap: '/usr/bin/bwrap', trusted: false, unset: [], stateLimits: shippedPolicy().limits.runners, project: null, network: false, profileDir: null, policy }).join('\n');
  const before = line();
  t.notMatch(before, join(etc, 'ssh', 'ssh_host_ed25519_key'), 'nothing to cover yet');
  writeFileSync(join(etc, 'ssh', 'ssh_host_ed25519_key'), 'secret');
  writeFileSync(join(etc, 'krb5.keytab'), 'secret');
  const next = line();
  t.match(next, `/dev/null\n${join(etc, 'ssh', 'ssh_host_ed25519_key')}`, 'the new host key is covered');
  t.match(next, `/dev/null\n${join(etc, 'krb5.keytab')}`, 'and the new keytab');
  const cat = (text: string) => {
    const args = text.split('\n');
    const cmd = args.indexOf('--');
    return spawnSync(args[0] as string, [...args.slice(1, cmd), '--', 'cat', join(etc, 'ssh', 'ssh_host_ed25519_key')], { encoding: 'utf8' });
  };
  t.equal(cat(before).stdout, 'secret', 'with the command line built before it appeared, the key is readable inside');
  t.notMatch(cat(next).stdout, 'secret', 'with the next one, it is not');
});
