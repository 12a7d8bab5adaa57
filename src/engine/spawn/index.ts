/*
 * The one spawn point: every process shadowcode starts is started here, and
 * every process of someone else's code is started in the OS sandbox where one
 * can be made (sandbox.ts), with the level achieved recorded in the audit log.
 *
 *   sandboxSupport() ─► Linux? bwrap on PATH? a throwaway bwrap with every namespace runs
 *                       `true`? (probed once per PATH, cached) ─► 'bwrap' | 'none' + why
 *   supervise(ticket, req)  ─► sandbox? (none + sandbox.require: SC_SANDBOX_UNAVAILABLE, nothing starts)
 *        ─► audit row 'spawn' {decision_id, kind, argv0, level, network}
 *        ─► node dist/supervisor.cjs ─► [bwrap …] argv (own process group)
 *        fds 0-2: the child's   fd 3: lifeline (stop() ends it) + pid and status lines
 *   startDirect(ticket, req) ─► same decision and row ─► [bwrap …] argv, detached, no supervisor
 *                               (background processes with their own lifetime, a version probe)
 *   startHelper(ticket, req) ─► one of our own helpers (the SQLite query child) in a sandbox of
 *                               its own: node, its files, exactly the files given; nothing else
 *   startOwnProgram(ticket, …) ─► the shared engine: our code, which needs the profile; not sandboxed
 *   with telemetry on, every sandboxed start is a `spawn KIND` span: sandbox level, network, exit
 */
import { type ChildProcess, spawn, spawnSync, type StdioOptions } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Socket } from 'node:net';
import { ScError } from '../../errors.js';
import type { Policy } from '../../policy/load.js';
import { appendAudit } from '../../store/audit.js';
import type { Db } from '../../store/db.js';
import { type Attrs, tel } from '../../telemetry/hooks.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { packageRoot } from '../../util/paths.js';
import { holdProtected } from './holds.js';
import { commandError, type Confinement, findOnPath, helperArgv, pathLookup, type SandboxLevel, type SandboxSupport, sandboxArgv, sandboxEnv } from './sandbox.js';

export { type SandboxLevel, type SandboxSupport, protectedProjectPaths } from './sandbox.js';

export type SpawnKind = 'command' | 'background' | 'runner' | 'mcp_server' | 'probe';

export interface SpawnRequest {
  readonly kind: SpawnKind;
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  /** What the process may reach: its project, the network, and any folders bound beside them. */
  readonly confine: Omit<Confinement, 'profileDir'>;
  /** The argv is the user's own (a server definition, a runner entry), not a model's choice. */
  readonly trustedArgv: boolean;
  readonly policy: Policy;
  /** The profile's store: the spawn row goes there, and the profile it lives in stays hidden. */
  readonly db: Db;
}

export interface SupervisorStatus {
  readonly why: string;
  readonly outcome: 'exited' | 'terminated' | 'killed' | 'spawn_failed' | 'unknown';
  /** The owner ended the lifeline (a cancel, a close, the owner's death) before the process ended by itself. */
  readonly stopped: boolean;
  readonly code: number | null;
  readonly signal: string | null;
  readonly leader: { code: number | null; signal: string | null } | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

export interface Supervised {
  /** The supervisor process: its stdin, stdout and stderr are the child's own. */
  readonly process: ChildProcess;
  readonly level: SandboxLevel;
  /** The leader's pid (bwrap's, when sandboxed) once started; null if it never started. */
  readonly pid: Promise<number | null>;
  /** The supervisor's last word, after the whole group is gone. */
  readonly status: Promise<SupervisorStatus>;
  /** Ends the lifeline: TERM, the grace period, KILL to the group. Idempotent. */
  stop(): void;
}

const probed = new Map<string, SandboxSupport>();

/** Whether a sandbox can be made with the engine's own PATH; the answer is cached per PATH. */
export function sandboxSupport(path: string = process.env.PATH ?? ''): SandboxSupport {
  const key = `${process.platform}\0${path}`;
  let s = probed.get(key);
  if (!s) probed.set(key, (s = probe(path)));
  return s;
}

function probe(path: string): SandboxSupport {
  if (process.platform !== 'linux') return { level: 'none', bwrap: null, detail: `no sandbox on ${process.platform} (bubblewrap is Linux only)` };
  const bwrap = findOnPath('bwrap', path);
  if (!bwrap) return { level: 'none', bwrap: null, detail: 'bwrap is not on PATH (install the bubblewrap package)' };
  const r = spawnSync(bwrap, ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', 'true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  if (r.status !== 0) {
    const why = (r.stderr?.toString('utf8').trim().split('\n')[0] ?? '') || r.error?.message || `exit ${r.status}`;
    return { level: 'none', bwrap: null, detail: `bwrap cannot create namespaces here: ${why.slice(0, 200)}` };
  }
  return { level: 'bwrap', bwrap, detail: `bubblewrap (${bwrap})` };
}

/** What status, doctor and approvals say about the sandbox: "sandboxed" or "unsandboxed", and why. */
export function sandboxStatus(policy: Policy): { level: SandboxLevel; label: 'sandboxed' | 'unsandboxed'; detail: string; require: boolean } {
  const s = sandboxSupport();
  return { level: s.level, label: s.level === 'none' ? 'unsandboxed' : 'sandboxed', detail: s.detail, require: policy.sandbox.require };
}

const sandboxPolicies = new WeakMap<Policy, Policy['sandbox']>();

/**
 * The sandbox settings with the project's read-only paths joined by the literal
 * paths of policy/protected-paths.json's never_write rules (patterns with `*` are
 * left to the file tools: a mount needs a real path). Once per loaded policy.
 */
function sandboxPolicy(policy: Policy): Policy['sandbox'] {
  let sp = sandboxPolicies.get(policy);
  if (sp) return sp;
  const literal = (policy.protected_paths?.never_write ?? []).flatMap((r) => r.paths).filter((p) => !p.includes('*') && !p.startsWith('/') && !p.split('/').includes('..'));
  sp = { ...policy.sandbox, project_read_only: [...new Set([...policy.sandbox.project_read_only, ...literal])] };
  sandboxPolicies.set(policy, sp);
  return sp;
}

const profileOf = (db: Db) => (db.name && db.name !== ':memory:' ? dirname(db.name) : null);

interface Prepared {
  readonly argv: string[];
  readonly env: Record<string, string>;
  readonly level: SandboxLevel;
  /** Why the command cannot start, found before bwrap would hide it. */
  readonly error: string | null;
  /** Gives back the placeholders of missing protected paths; call once the process and its sandbox are gone. */
  readonly release: () => void;
}

/**
 * What a sandboxed start of req needs: placeholders for the project's missing
 * protected paths (held until release), the bwrap command line, the
 * environment inside and why the command cannot start, if it cannot. The
 * spawn point's own cost per sandboxed start (bench/spawn.mjs measures it).
 */
export function confinedCommand(req: Omit<SpawnRequest, 'kind' | 'db'>, bwrap: string, profileDir: string | null): Omit<Prepared, 'level'> {
  const sp = sandboxPolicy(req.policy);
  // A protected path that does not exist yet gets a placeholder first, so the sandbox can bind it read-only.
  const hold = req.confine.project ? holdProtected(req.confine.project, sp.project_read_only, profileDir) : null;
  try {
    const find = pathLookup(req.env.PATH ?? '');
    return {
      argv: sandboxArgv({ ...req.confine, profileDir, argv: req.argv, cwd: req.cwd, env: req.env, policy: sp, bwrap, trusted: req.trustedArgv, unset: req.policy.environment.deny, stateLimits: req.policy.limits.runners, find }),
      env: sandboxEnv(req.env, req.confine.project),
      error: commandError(req.argv[0] ?? '', req.cwd, req.env.PATH ?? '', find),
      release: () => hold?.release(),
    };
  } catch (err) {
    hold?.release();
    throw err;
  }
}

/** Decides the sandbox, refuses when it is required and missing, records the spawn. */
function prepare(ticket: GateTicket, req: SpawnRequest): Prepared {
  assertTicket(ticket, '*');
  const support = sandboxSupport();
  if (support.level === 'none' && req.policy.sandbox.require) {
    throw new ScError('SC_SANDBOX_UNAVAILABLE', `${JSON.stringify(req.argv[0])} was not started: ${support.detail}, and policy/sandbox.json requires a sandbox`, { kind: req.kind });
  }
  const prepared: Prepared =
    support.level === 'bwrap'
      ? { ...confinedCommand(req, support.bwrap as string, profileOf(req.db)), level: 'bwrap' }
      : { argv: [...req.argv], env: req.env, level: 'none', error: null, release: () => {} };
  try {
    // Recorded before the process exists: a spawn the log does not know of cannot happen.
    appendAudit(req.db, 'spawn', { decision_id: ticket.decisionId, kind: req.kind, argv0: req.argv[0] ?? null, level: prepared.level, network: req.confine.network, ...(req.confine.network && req.confine.networkWhy ? { network_why: req.confine.networkWhy } : {}), project: req.confine.project });
  } catch (err) {
    prepared.release();
    throw err;
  }
  return prepared;
}

/** Starts a process under the supervisor, sandboxed where possible. stdin 'pipe' gives the caller the child's stdin. */
export function supervise(ticket: GateTicket, req: SpawnRequest & { graceMs: number; stdin: 'pipe' | 'ignore' }): Supervised {
  assertTicket(ticket, '*');
  const p = prepare(ticket, req);
  const payload = Buffer.from(JSON.stringify({ argv: p.argv, cwd: req.cwd, grace_ms: req.graceMs, sandboxed: p.level === 'bwrap', ...(p.error ? { error: p.error } : {}) })).toString('base64');
  let sup: ChildProcess;
  try {
    sup = spawn(process.execPath, [join(packageRoot(), 'dist', 'supervisor.cjs'), payload], { cwd: req.cwd, env: p.env, stdio: [req.stdin, 'pipe', 'pipe', 'pipe'], shell: false });
  } catch (err) {
    p.release();
    throw err;
  }
  const life = sup.stdio[3] as Socket;
  life.on('error', () => {});
  let text = '';
  let resolvePid: (pid: number | null) => void = () => {};
  const pid = new Promise<number | null>((r) => (resolvePid = r));
  life.on('data', (d: Buffer) => {
    if (text.length > 8192) return;
    text += d.toString('utf8');
    const first = text.split('\n')[0] as string;
    if (text.includes('\n')) {
      try {
        resolvePid((JSON.parse(first) as { pid?: number }).pid ?? null);
      } catch {
        resolvePid(null);
      }
    }
  });
  const status = new Promise<SupervisorStatus>((resolve) => {
    sup.on('error', (err) => {
      resolvePid(null);
      resolve({ why: 'spawn_failed', outcome: 'spawn_failed', stopped: false, code: null, signal: null, leader: null, error: `cannot start the supervisor: ${err.message}`, duration_ms: 0 });
    });
    sup.on('close', () => {
      resolvePid(null);
      const last = text.trim().split('\n').filter((l) => l.includes('"outcome"')).pop();
      try {
        resolve(JSON.parse(last ?? '') as SupervisorStatus);
      } catch {
        // No status line: the supervisor itself was killed; --die-with-parent took the sandbox down.
        resolve({ why: 'supervisor_died', outcome: 'unknown', stopped: true, code: null, signal: null, leader: null, error: 'the supervisor ended without a status', duration_ms: 0 });
      }
    });
  });
  // The supervisor reports only after the whole group is gone, and with it the sandbox's mounts.
  void status.then(releaseQuietly(p));
  tel()?.track(`spawn ${req.kind}`, spawnAttrs(req.kind, req.argv[0], p.level, req.confine.network, ticket.decisionId), status.then((s) => ({ 'process.exit.code': s.code ?? undefined, 'shadowcode.spawn.outcome': s.outcome, 'shadowcode.spawn.signal': s.signal ?? undefined })));
  return { process: sup, level: p.level, pid, status, stop: () => life.end() };
}

/** A spawn's span attributes: what was started (the program's name, not its arguments), how confined. */
function spawnAttrs(kind: string, argv0: string | undefined, level: SandboxLevel, network: boolean, decisionId: string): Attrs {
  return { 'shadowcode.spawn.kind': kind, 'process.executable.name': argv0 ? basename(argv0) : undefined, 'shadowcode.sandbox.level': level, 'shadowcode.sandbox.network': network, 'shadowcode.decision.id': decisionId };
}

/** Resolves with the exit of a process started without the supervisor. */
function exitOf(child: ChildProcess): Promise<Attrs> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ 'process.exit.code': code ?? undefined, 'shadowcode.spawn.signal': signal ?? undefined }));
    child.once('error', () => resolve({ 'shadowcode.spawn.outcome': 'spawn_failed' }));
  });
}

/** Releases a hold after the process; a failure there leaves a placeholder behind, never an error in the caller's path. */
const releaseQuietly = (p: Prepared) => () => {
  try {
    p.release();
  } catch {
    /* left for the next sandbox in this project to clean up */
  }
};

/** Starts a process with no supervisor (it keeps its own lifetime), detached as the leader of its own group, sandboxed where possible. */
export function startDirect(ticket: GateTicket, req: SpawnRequest & { stdio: StdioOptions }): { child: ChildProcess; level: SandboxLevel } {
  assertTicket(ticket, '*');
  const p = prepare(ticket, req);
  let child: ChildProcess;
  try {
    if (p.error) throw Object.assign(new Error(`spawn ${req.argv[0]} ${p.error}`), { code: p.error });
    child = spawn(p.argv[0] as string, p.argv.slice(1), { cwd: req.cwd, env: p.env, detached: true, stdio: req.stdio, shell: false });
  } catch (err) {
    p.release();
    throw err;
  }
  // bwrap exits only after the sandbox's first process, and with it the PID namespace, is gone.
  child.once('exit', releaseQuietly(p));
  child.once('error', releaseQuietly(p));
  tel()?.track(`spawn ${req.kind}`, spawnAttrs(req.kind, req.argv[0], p.level, req.confine.network, ticket.decisionId), exitOf(child));
  return { child, level: p.level };
}

export interface HelperRequest {
  /** The program in dist/ (node runs it). */
  readonly program: string;
  /** What it reads (files or folders), shown read-only; `at` puts it at another path inside. */
  readonly reads: ReadonlyArray<{ readonly path: string; readonly at?: string }>;
  /** Files it writes, shown read-write. */
  readonly writes: readonly string[];
  readonly policy: Policy;
  /** The spawn row goes here. */
  readonly db: Db;
  readonly stdio: StdioOptions;
  /** The project the work is for, for the record only: it is not visible inside. */
  readonly project: string | null;
}

/**
 * Starts one of shadowcode's own helper programs (the SQLite query child) in a
 * sandbox of its own: node, the program's files and exactly the files it is
 * given; no project, no home, no profile, no network. Without a sandbox it runs
 * as before, recorded as level none (or refused under sandbox.require).
 */
export function startHelper(ticket: GateTicket, req: HelperRequest): { child: ChildProcess; level: SandboxLevel } {
  assertTicket(ticket, '*');
  const support = sandboxSupport();
  const sp = sandboxPolicy(req.policy);
  const name = basename(req.program).replace(/\.c?js$/, '');
  if (support.level === 'none' && sp.require) {
    throw new ScError('SC_SANDBOX_UNAVAILABLE', `the ${name} helper was not started: ${support.detail}, and policy/sandbox.json requires a sandbox`, { kind: 'helper' });
  }
  const argv = [process.execPath, req.program];
  const env = { PATH: process.env.PATH ?? '' };
  const boxed =
    support.level === 'bwrap'
      ? helperArgv({ bwrap: support.bwrap as string, policy: sp, argv, reads: [...helperFiles(req.program), ...req.reads], writes: req.writes, unset: req.policy.environment.deny, home: process.env.HOME })
      : argv;
  appendAudit(req.db, 'spawn', { decision_id: ticket.decisionId, kind: 'helper', argv0: name, level: support.level, network: false, project: req.project });
  const child = spawn(boxed[0] as string, boxed.slice(1), { cwd: '/', env, stdio: req.stdio, shell: false });
  tel()?.track('spawn helper', spawnAttrs('helper', name, support.level, false, ticket.decisionId), exitOf(child));
  return { child, level: support.level };
}

const helperFileCache = new Map<string, Array<{ path: string; at: string }>>();

/**
 * What a helper in dist/ needs to start: the package's package.json (it says
 * the program is an ES module), the program itself, and the one dependency it
 * imports with that dependency's own (better-sqlite3 ─► bindings ─►
 * file-uri-to-path), each shown at the path node looks it up at from the
 * program (a linked node_modules is shown at its link's path). Found once.
 */
function helperFiles(program: string): Array<{ path: string; at: string }> {
  let files = helperFileCache.get(program);
  if (files) return files;
  const root = packageRoot();
  files = [
    { path: join(root, 'package.json'), at: join(root, 'package.json') },
    { path: realpathSync(program), at: program },
  ];
  let from = dirname(program);
  for (const dep of ['better-sqlite3', 'bindings', 'file-uri-to-path']) {
    const at = lookupPackage(dep, from);
    if (!at) continue;
    files.push({ path: realpathSync(at), at });
    from = at;
  }
  helperFileCache.set(program, files);
  return files;
}

/** The folder node's resolver finds `name` in, searching node_modules upward from `from` (links not followed). */
function lookupPackage(name: string, from: string): string | null {
  for (let d = from; ; d = dirname(d)) {
    const at = join(d, 'node_modules', name);
    if (existsSync(join(at, 'package.json'))) return at;
    if (dirname(d) === d) return null;
  }
}

/** Starts one of shadowcode's own programs: trusted code that needs the profile, so it is not sandboxed (and not a spawn of someone else's code). */
export function startOwnProgram(ticket: GateTicket, file: string, args: readonly string[], opts: { cwd?: string; env: NodeJS.ProcessEnv; stdio: StdioOptions; detached?: boolean }): ChildProcess {
  assertTicket(ticket, '*');
  return spawn(process.execPath, [file, ...args], { ...(opts.cwd ? { cwd: opts.cwd } : {}), env: opts.env, stdio: opts.stdio, detached: opts.detached ?? false, shell: false });
}

/**
 * Hands an address to the desktop's opener (xdg-open; open on macOS): the user's own browser, so
 * it is neither sandboxed nor waited for. Resolves false when there is no opener to start.
 */
export function openInBrowser(ticket: GateTicket, url: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  assertTicket(ticket, 'cli:console.open');
  return new Promise((resolve) => {
    const child = spawn(process.platform === 'darwin' ? 'open' : 'xdg-open', [url], { env, detached: true, stdio: 'ignore', shell: false });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}
