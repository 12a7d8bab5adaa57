/*
 * The one spawn point: every process shadowcode starts is started here, and
 * every process of someone else's code is started in the OS sandbox where one
 * can be made (sandbox.ts), with the level achieved recorded in the audit log.
 *
 *   sandboxSupport() ─► Linux? bwrap on PATH? a throwaway bwrap with every namespace runs
 *                       `true`? (probed once per PATH, cached) ─► 'bwrap' | 'none' + why
 *   supervise(ticket, req)  ─► sandbox? (none + sandbox.require: SC_SANDBOX_UNAVAILABLE, nothing starts)
 *        ─► audit row 'spawn' {decision_id, kind, argv0, level, network}
 *        ─► node dist/supervisor.js ─► [bwrap …] argv (own process group)
 *        fds 0-2: the child's   fd 3: lifeline (stop() ends it) + pid and status lines
 *   startDirect(ticket, req) ─► same decision and row ─► [bwrap …] argv, detached, no supervisor
 *                               (background processes with their own lifetime, a version probe)
 *   startOwnProgram(ticket, …) ─► one of shadowcode's own programs (the SQLite query child,
 *                               the shared engine): our code, which needs the profile; not sandboxed
 */
import { type ChildProcess, spawn, spawnSync, type StdioOptions } from 'node:child_process';
import { dirname, join } from 'node:path';
import type { Socket } from 'node:net';
import { ScError } from '../../errors.js';
import type { Policy } from '../../policy/load.js';
import { appendAudit } from '../../store/audit.js';
import type { Db } from '../../store/db.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { packageRoot } from '../../util/paths.js';
import { commandError, type Confinement, findOnPath, type SandboxLevel, type SandboxSupport, sandboxArgv, sandboxEnv } from './sandbox.js';

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

/**
 * The sandbox settings with the project's read-only paths joined by the literal
 * paths of policy/protected-paths.json's never_write rules (patterns with `*` are
 * left to the file tools: a mount needs a real path).
 */
function sandboxPolicy(policy: Policy): Policy['sandbox'] {
  const literal = (policy.protected_paths?.never_write ?? []).flatMap((r) => r.paths).filter((p) => !p.includes('*') && !p.startsWith('/') && !p.split('/').includes('..'));
  return { ...policy.sandbox, project_read_only: [...new Set([...policy.sandbox.project_read_only, ...literal])] };
}

interface Prepared {
  readonly argv: string[];
  readonly env: Record<string, string>;
  readonly level: SandboxLevel;
  /** Why the command cannot start, found before bwrap would hide it. */
  readonly error: string | null;
}

/** Decides the sandbox, refuses when it is required and missing, records the spawn. */
function prepare(ticket: GateTicket, req: SpawnRequest): Prepared {
  assertTicket(ticket, '*');
  const support = sandboxSupport();
  const sp = sandboxPolicy(req.policy);
  if (support.level === 'none' && sp.require) {
    throw new ScError('SC_SANDBOX_UNAVAILABLE', `${JSON.stringify(req.argv[0])} was not started: ${support.detail}, and policy/sandbox.json requires a sandbox`, { kind: req.kind });
  }
  const profileDir = req.db.name && req.db.name !== ':memory:' ? dirname(req.db.name) : null;
  const prepared: Prepared =
    support.level === 'bwrap'
      ? {
          argv: sandboxArgv({ ...req.confine, profileDir, argv: req.argv, cwd: req.cwd, env: req.env, policy: sp, bwrap: support.bwrap as string, trusted: req.trustedArgv, unset: req.policy.environment.deny }),
          env: sandboxEnv(req.env, req.confine.project),
          level: 'bwrap',
          error: commandError(req.argv[0] ?? '', req.cwd, req.env.PATH ?? ''),
        }
      : { argv: [...req.argv], env: req.env, level: 'none', error: null };
  // Recorded before the process exists: a spawn the log does not know of cannot happen.
  appendAudit(req.db, 'spawn', { decision_id: ticket.decisionId, kind: req.kind, argv0: req.argv[0] ?? null, level: prepared.level, network: req.confine.network, ...(req.confine.network && req.confine.networkWhy ? { network_why: req.confine.networkWhy } : {}), project: req.confine.project });
  return prepared;
}

/** Starts a process under the supervisor, sandboxed where possible. stdin 'pipe' gives the caller the child's stdin. */
export function supervise(ticket: GateTicket, req: SpawnRequest & { graceMs: number; stdin: 'pipe' | 'ignore' }): Supervised {
  assertTicket(ticket, '*');
  const p = prepare(ticket, req);
  const payload = Buffer.from(JSON.stringify({ argv: p.argv, cwd: req.cwd, grace_ms: req.graceMs, sandboxed: p.level === 'bwrap', ...(p.error ? { error: p.error } : {}) })).toString('base64');
  const sup = spawn(process.execPath, [join(packageRoot(), 'dist', 'supervisor.js'), payload], { cwd: req.cwd, env: p.env, stdio: [req.stdin, 'pipe', 'pipe', 'pipe'], shell: false });
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
  return { process: sup, level: p.level, pid, status, stop: () => life.end() };
}

/** Starts a process with no supervisor (it keeps its own lifetime), detached as the leader of its own group, sandboxed where possible. */
export function startDirect(ticket: GateTicket, req: SpawnRequest & { stdio: StdioOptions }): { child: ChildProcess; level: SandboxLevel } {
  assertTicket(ticket, '*');
  const p = prepare(ticket, req);
  if (p.error) throw Object.assign(new Error(`spawn ${req.argv[0]} ${p.error}`), { code: p.error });
  const child = spawn(p.argv[0] as string, p.argv.slice(1), { cwd: req.cwd, env: p.env, detached: true, stdio: req.stdio, shell: false });
  return { child, level: p.level };
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
