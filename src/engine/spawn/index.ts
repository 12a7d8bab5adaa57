/*
 * The one spawn point: every process shadowcode starts is started here, and
 * every process of someone else's code is started in the OS sandbox where one
 * can be made (sandbox.ts), with the level achieved recorded in the audit log.
 *
 *   sandboxSupport() ─► Linux? bwrap on PATH? a throwaway bwrap with every namespace, no
 *                       capabilities, no user namespace inside and a bounded tmpfs runs `true`?
 *                       (without the last two on an older bwrap; probed once per PATH, cached)
 *                       ─► 'bwrap' | 'none' + why, and what this bwrap can do
 *   supervise(ticket, req)  ─► a ticket for req.kind? (SPAWN_ACTIONS; any other: SC_TICKET_REFUSED, nothing starts)
 *        ─► sandbox? (none + sandbox.require: SC_SANDBOX_UNAVAILABLE, nothing starts)
 *        ─► the project's protected layout (nested repositories and host configs, protected
 *           links' targets, the hooks folder git config names) ─► placeholders for the held
 *           ones that are missing ─► bwrap command line with all of them read-only
 *        ─► the process bound (bounds.ts: a cgroup for root, RLIMIT_NPROC inside for a user)
 *        ─► audit row 'spawn' {decision_id, kind, argv0, level, network}
 *        sandboxed ─► bwrap … argv forked here (own process group, fds 0-2 only: fds.ts; in root's
 *          cgroup), supervised by this process (own-group.ts): bwrap's --die-with-parent and PID
 *          namespace do what a supervisor process would, so none is started
 *        unsandboxed ─► node dist/supervisor.cjs, started before all of this, empty-handed: its
 *          start-up overlaps it, and it starts nothing until the spec comes on its fd 4 (a refusal
 *          closes that unwritten) ─► argv (own process group)
 *          fds 0-2: the child's   fd 3: lifeline (stop() ends it) + pid and status lines;
 *          the supervisor passes neither fd 3 nor anything it inherited on (fds.ts)
 *        ─► after the group: placeholders given back; protected paths it created where
 *           nothing could be held ─► audit row 'protected_created', Supervised.created
 *   startDirect(ticket, req) ─► same decision, bound and row ─► [bwrap …] argv, detached, no
 *                               supervisor, nothing inherited passed on (background processes
 *                               with their own lifetime, a version probe)
 *   startHelper(ticket, req) ─► one of our own helpers (the SQLite query child) in a sandbox of
 *                               its own: node, its files, exactly the files given; nothing else
 *   startOwnProgram(ticket, …) ─► the shared engine: our code, which needs the profile; not sandboxed
 *   with telemetry on, every sandboxed start is a `spawn KIND` span: sandbox level, network, exit
 */
import { type ChildProcess, spawn, spawnSync, type StdioOptions } from 'node:child_process';
import { existsSync, realpathSync, type Stats, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { ScError } from '../../errors.js';
import type { Policy } from '../../policy/load.js';
import { appendAudit } from '../../store/audit.js';
import type { Db } from '../../store/db.js';
import { type Attrs, tel } from '../../telemetry/hooks.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { packageRoot } from '../../util/paths.js';
import { type ProtectedLayout, protectedLayout } from '../../policy/protected-scan.js';
import { type GateEnv } from '../../policy/gate.js';
import { trustOf } from '../../policy/requests.js';
import { hostPortText } from '../../policy/net.js';
import { getProject } from '../../store/projects.js';
import { describeBound, inCgroup, joinCgroup, leaveCgroup, processBound, SHELL, startBound } from './bounds.js';
import { builderFor, bwrapBuilder, type Trial } from './builder.js';
import { type Discarded, readDiscarded, reportFile } from './discarded.js';
import { explainFailure, type SandboxBlock } from './explain.js';
import { GATE_FD, sealed } from './fds.js';
import { type CachePlan, cachePlan } from './caches.js';
import { absentInHome, type HomeLook, within } from './state-paths.js';
import { type Boundary, definitionBoundary, hiddenPaths, NO_GRANTS, profileBoundary } from './grants.js';
import { holdProtected } from './holds.js';
import { startNetProxy } from './net-proxy.js';
import { describeFilter, syscallFilter } from './seccomp.js';
import { ownGroup, type SupervisorStatus } from './own-group.js';
import { absolutePath, type BwrapFeatures, commandError, type Confinement, type Lookup, pathLookup, type SandboxBounds, type SandboxLevel, type SandboxSupport, sandboxEnv } from './sandbox.js';

export { type SandboxLevel, type SandboxSupport, protectedProjectPaths } from './sandbox.js';
export { type Boundary, NO_GRANTS } from './grants.js';
export { blockText, type SandboxBlock } from './explain.js';
export { type Discarded, discardedNotice } from './discarded.js';

export type SpawnKind = 'command' | 'background' | 'runner' | 'mcp_server' | 'probe';

/**
 * The gate actions whose tickets may start each kind of process, in full: a ticket
 * opens the spawn point only for the kind its decision was about (a ticket for a
 * read-only tool, or for another kind, starts nothing: SC_TICKET_REFUSED).
 */
export const SPAWN_ACTIONS = {
  command: ['job:run'],
  background: ['background:start'],
  runner: ['runner:spawn'],
  mcp_server: ['mcp:connect'],
  probe: ['cli:model.list', 'cli:model.probe'],
  helper: ['tool:shadow_sqlite'],
  engine: ['cli:engine.start'],
} as const satisfies Record<SpawnKind | 'helper' | 'engine', readonly string[]>;

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

export type { SupervisorStatus } from './own-group.js';

export interface Supervised {
  /** The process whose stdin, stdout and stderr are the child's own: bwrap when sandboxed, else the node supervisor. */
  readonly process: ChildProcess;
  readonly level: SandboxLevel;
  /** The leader's pid (bwrap's, when sandboxed) once started; null if it never started. */
  readonly pid: Promise<number | null>;
  /** How it ended, after the whole group is gone (the supervisor's last word, or bwrap's exit when sandboxed). */
  readonly status: Promise<SupervisorStatus>;
  /** Ends it: TERM, the grace period, KILL to the group (the lifeline ended, or own-group.ts). Idempotent. */
  stop(): void;
  /**
   * After the whole group is gone: the protected paths (project-relative) the process
   * created where the sandbox could hold nothing read-only (a new nested repository, a
   * host's config folder below the top). Each is also in a `protected_created` audit row.
   */
  readonly created: Promise<readonly string[]>;
  /**
   * Why it failed, when the sandbox is why: the paths its output (the end of it) names that the
   * sandbox hid or showed read-only, each with the `sandbox allow` that would show it (explain.ts).
   * None unsandboxed, or when it succeeded.
   */
  explain(output: string, code: number | null): SandboxBlock[];
  /** After the whole group is gone: what it wrote in its private home and /tmp, now discarded (discarded.ts); null for nothing. */
  readonly discarded: Promise<Discarded | null>;
}

const probed = new Map<string, SandboxSupport & { features: BwrapFeatures }>();
const ALL: BwrapFeatures = { size: true, disableUserns: true };

/** Whether a sandbox can be made with the engine's own PATH; the answer is cached per PATH. */
export function sandboxSupport(path: string = process.env.PATH ?? ''): SandboxSupport & { features: BwrapFeatures } {
  const key = `${process.platform}\0${path}`;
  let s = probed.get(key);
  if (!s) probed.set(key, (s = probe(path)));
  return s;
}

function probe(path: string): SandboxSupport & { features: BwrapFeatures } {
  const builder = builderFor();
  if (!builder) return { level: 'none', bwrap: null, detail: `no sandbox on ${process.platform} (bubblewrap is Linux only; no other platform has a sandbox builder yet)`, features: ALL };
  return builder.probe(path, trial);
}

/** The builder's throwaway start (is the sandbox possible here?), made here like every start. */
const trial: Trial = (program, args) => {
  const r = spawnSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  return { status: r.status, stderr: r.stderr?.toString('utf8') ?? '', ...(r.error ? { error: r.error.message } : {}) };
};

const currentUid = () => (typeof process.getuid === 'function' ? process.getuid() : -1);

/** What status, doctor and approvals say about the sandbox: "sandboxed" or "unsandboxed", and why; sandboxed, also what bounds it. */
export function sandboxStatus(policy: Policy): { level: SandboxLevel; label: 'sandboxed' | 'unsandboxed'; detail: string; require: boolean } {
  const s = sandboxSupport();
  if (s.level === 'none') return { level: s.level, label: 'unsandboxed', detail: s.detail, require: policy.sandbox.require };
  const L = policy.limits.sandbox;
  const mib = (n: number) => `${Math.round(n / 1048576)} MiB`;
  const parts = [
    s.detail,
    s.features.disableUserns ? 'no capabilities' : 'no capabilities (this bwrap cannot forbid new user namespaces inside)',
    s.features.size ? `/tmp ${mib(L.tmp_bytes)}, home ${mib(L.home_bytes)}` : '/tmp and home unbounded (this bwrap has no --size)',
    describeBound(processBound(currentUid()), L.processes),
    describeFilter(syscallFilter(policy.sandbox), policy.sandbox.syscalls),
  ];
  return { level: s.level, label: 'sandboxed', detail: parts.join('; '), require: policy.sandbox.require };
}

/**
 * The sandbox settings. Its project_read_only paths are held: bound read-only whether
 * they exist or not (a placeholder stands in for a missing one). Every other protected
 * path of policy/protected-paths.json is found at each start (protected-scan.ts) and
 * bound read-only where it exists.
 */
export function sandboxPolicy(policy: Policy): Policy['sandbox'] {
  return policy.sandbox;
}

/** The compiled syscall filter of a sandbox policy, or null where this machine has none (sandboxStatus says why). */
const filterOf = (sp: Policy['sandbox']): Buffer | null => {
  const f = syscallFilter(sp);
  return f.kind === 'bpf' ? f.program : null;
};

const profileOf = (db: Db) => (db.name && db.name !== ':memory:' ? dirname(db.name) : null);

interface Prepared {
  readonly argv: string[];
  /** Where bwrap is in argv (0); null without a sandbox. */
  readonly bwrapAt: number | null;
  /** Root's pids cgroup for this start (its cgroup.procs): whoever starts argv starts it with inCgroup (bounds.ts). */
  readonly cgroup: string | null;
  readonly env: Record<string, string>;
  readonly level: SandboxLevel;
  /** Why the command cannot start, found before bwrap would hide it. */
  readonly error: string | null;
  /** The syscall filter bwrap loads for the command (seccomp.ts); null without a sandbox or where none can be built. */
  readonly filter: Buffer | null;
  /** Gives back the placeholders of missing protected paths; call once the process and its sandbox are gone. */
  readonly release: () => void;
  /**
   * The protected paths that exist now and did not when the sandbox was made (a nested
   * repository, a host's config folder): the sandbox could not hold what was not there.
   * Project-relative; call after release.
   */
  readonly created: () => string[];
  /** What it left in its private home and /tmp, read from its report (once, after it ended); null when nothing or no report. */
  readonly discarded: () => Discarded | null;
}

/** What the user granted that applies to a start: the profile's grants for commands, tests, background processes and runners; a server gets only what its definition declares. */
export function boundaryOf(req: Pick<SpawnRequest, 'kind' | 'confine' | 'env' | 'policy'>, profileDir: string | null): Boundary {
  const sp = sandboxPolicy(req.policy);
  if (req.kind === 'mcp_server') return definitionBoundary(req.confine.declared, profileDir, req.confine.project, sp, req.env.HOME);
  if (req.kind === 'probe') return NO_GRANTS;
  return profileBoundary(profileDir, req.confine.project, sp, req.env.HOME);
}

/** One grant a command runs with, as its approval names it. */
export type GrantNote = { readonly path: string; readonly access: 'read-only' | 'read-write'; readonly scope: string; readonly secret?: true } | { readonly host: string; readonly scope: string; readonly private?: true };

/**
 * What a command approval says about the sandbox the command would run in: `unsandboxed` when
 * none can be made here; otherwise every grant beyond the defaults it gets (a secret path marked
 * as such), so the person approving sees what the command can reach that a bare one could not.
 */
export function sandboxMark(db: Db, project: string, policy: Policy, home: string | undefined): { unsandboxed?: true; grants?: GrantNote[] } {
  if (sandboxSupport().level === 'none') return { unsandboxed: true };
  const b = profileBoundary(profileOf(db), project, sandboxPolicy(policy), home);
  const network = b.hosts.length > 0 && getProject(db, project).network;
  const grants: GrantNote[] = [
    ...b.paths.map((p) => ({ path: p.path, access: p.write ? ('read-write' as const) : ('read-only' as const), scope: p.scope, ...(p.secret ? { secret: true as const } : {}) })),
    // With the project's whole network open, host grants change nothing.
    ...(network ? [] : b.hosts.map((h) => ({ host: hostPortText(h), scope: h.scope, ...(h.private ? { private: true as const } : {}) }))),
  ];
  return grants.length ? { grants } : {};
}

/** Only granted hosts may be reached: the network is not open, and some host is granted. */
export const proxied = (req: Pick<SpawnRequest, 'confine'>, b: Boundary) => !req.confine.network && b.hosts.length > 0;

/** Where the bridge program is, for a start whose hosts go through the proxy. */
export const bridgeProgram = () => join(packageRoot(), 'dist', 'net-bridge.cjs');

export interface Extras {
  readonly grants: Boundary;
  /** The project's private package caches; made here (folders made, seeds copied) when not given. */
  readonly caches?: CachePlan;
  readonly proxy?: { readonly dir: string; readonly socket: string } | null;
  /** The project's protected paths found below its top (protected-scan.ts); found here when not given. */
  readonly protectedBinds?: readonly string[];
  /** Report what the process leaves in its private home and /tmp (a command, a background process, a server). */
  readonly report?: boolean;
  /** Hold the command until this process says go (sandbox.ts GATE): a start this process supervises itself. */
  readonly gate?: boolean;
  /** The report file made for this start (confinedCommand). */
  readonly reportFile?: string;
  /** The protected layout of each folder granted writable; found here when not given. */
  readonly grantLayouts?: ReadonlyArray<{ readonly root: string; readonly layout: ProtectedLayout }>;
  /** The start's one listing of the home, taken before its caches were made (confinedCommand); listed again when not given. */
  readonly homeLook?: HomeLook;
  /** The project's held paths as its holds just found or made them (confinedCommand); looked at again when not given. */
  readonly protectedSeen?: ReadonlyMap<string, Stats>;
}

/** The protected layout of each folder a start gets read-write (protected-scan.ts, as for the project). */
export function grantLayouts(policy: Policy, grants: Boundary): Array<{ root: string; layout: ProtectedLayout }> {
  return grants.paths.filter((p) => p.write && statSync(p.path, { throwIfNoEntry: false })?.isDirectory()).map((p) => ({ root: p.path, layout: protectedLayout(policy, p.path) }));
}

/** The bwrap command line of a start, with nothing made or held (sandbox show; confinedCommand below). */
export function commandLine(req: Omit<SpawnRequest, 'kind' | 'db'>, bwrap: string, profileDir: string | null, extras: Extras, bounds?: SandboxBounds, find: Lookup = pathLookup(req.env.PATH ?? '')): string[] {
  const sp = sandboxPolicy(req.policy);
  const proxy = extras.proxy ? { ...extras.proxy, bridge: bridgeProgram(), node: process.execPath } : undefined;
  const project = req.confine.project;
  const protectedBinds = extras.protectedBinds ?? (project ? protectedLayout(req.policy, project).entries.filter((e) => e.kind !== 'link').map((e) => e.rel) : []);
  const caches = extras.caches ?? projectCaches(req, profileDir, false, undefined, undefined, extras.grants);
  const report = extras.reportFile ? { report: { file: extras.reportFile, entries: req.policy.limits.sandbox.discarded_entries } } : {};
  const gate = extras.gate ? { gate: true } : {};
  const grantProtected = (extras.grantLayouts ?? grantLayouts(req.policy, extras.grants)).map((g) => ({ root: g.root, rels: g.layout.entries.filter((e) => e.kind !== 'link').map((e) => e.rel) }));
  return (builderFor() ?? bwrapBuilder).commandLine({ ...req.confine, ...report, ...gate, grantProtected, profileDir, argv: req.argv, cwd: req.cwd, env: req.env, policy: sp, bwrap, trusted: req.trustedArgv, unset: req.policy.environment.deny, stateLimits: req.policy.limits.runners, find, grants: extras.grants, protectedBinds, caches, ...(extras.homeLook ? { homeLook: extras.homeLook } : {}), ...(extras.protectedSeen ? { protectedSeen: extras.protectedSeen } : {}), pathEntries: req.policy.limits.sandbox.path_entries, ...(proxy ? { proxy, network: false } : {}), ...(bounds ? { bounds } : {}) });
}

/** The private package caches of a start (caches.ts): none without a project; `dry` makes and copies nothing (sandbox show). */
export function projectCaches(req: Pick<SpawnRequest, 'confine' | 'env' | 'policy'>, profileDir: string | null, dry = false, owner?: number, look?: HomeLook, grants: Boundary = NO_GRANTS): CachePlan {
  const sp = sandboxPolicy(req.policy);
  const avoid = [...hiddenPaths(sp, req.env.HOME), ...(profileDir ? [profileDir] : [])];
  // What the start shows writable besides the project: no cache may live where a sandbox can change it.
  const writable = grants.paths.filter((g) => g.write).map((g) => g.path);
  return cachePlan(req.confine.project, req.env, sp, req.policy.limits.sandbox.cache_seed_entries, avoid, { dry, writable, ...(owner !== undefined ? { owner } : {}), ...(look ? { look } : {}) });
}

/**
 * The bounds a start by `uid` gets, for showing them (sandbox show): nothing is made. Root's
 * cgroup is joined before bwrap, outside its command line, so only a user's limit appears in it.
 */
export function previewBounds(policy: Policy, uid: number = currentUid()): SandboxBounds {
  const L = policy.limits.sandbox;
  const pb = processBound(uid);
  const usable = pb.kind === 'rlimit' && sandboxPolicy(policy).system_read_only.some((d) => within(SHELL, d));
  return { tmp_bytes: L.tmp_bytes, home_bytes: L.home_bytes, inner: usable ? startBound(pb, L.processes).inner : [], features: sandboxSupport().features };
}

/**
 * What a sandboxed start of req needs: placeholders for the project's missing
 * protected paths (held until release), the process bound for a sandbox
 * started by `uid` (a cgroup made for root, released with the placeholders),
 * the command line, the environment inside and why the command cannot
 * start, if it cannot. The spawn point's own cost per sandboxed start
 * (bench/spawn.mjs measures it).
 */
export function confinedCommand(req: Omit<SpawnRequest, 'kind' | 'db'>, bwrap: string, profileDir: string | null, uid: number = currentUid(), extras: Extras = { grants: NO_GRANTS }): Omit<Prepared, 'level'> {
  const sp = sandboxPolicy(req.policy);
  const L = req.policy.limits.sandbox;
  const project = req.confine.project;
  // Nested repositories and host configs, protected links' targets, the hooks folder git config names.
  const layout = project ? protectedLayout(req.policy, project) : null;
  const held = [...sp.project_read_only, ...(layout?.entries.filter((e) => e.hold).map((e) => e.rel) ?? [])];
  // A protected path that does not exist yet gets a placeholder first, so the sandbox can bind it read-only.
  const hold = project ? holdProtected(project, held, profileDir, L) : null;
  let bound: ReturnType<typeof startBound> | null = null;
  let rep: ReturnType<typeof reportFile> | null = null;
  try {
    const pb = processBound(uid);
    // The shell that sets the limit must be visible inside: only where the policy shows its system folder.
    const usable = pb.kind !== 'rlimit' || sp.system_read_only.some((d) => within(SHELL, d));
    bound = startBound(usable ? pb : { kind: 'none', why: '' }, L.processes);
    const find = pathLookup(req.env.PATH ?? '');
    const bounds = { tmp_bytes: L.tmp_bytes, home_bytes: L.home_bytes, inner: bound.inner, features: sandboxSupport().features };
    const b = bound;
    const protectedBinds = layout?.entries.filter((e) => e.kind !== 'link').map((e) => e.rel) ?? [];
    rep = extras.report ? reportFile(req.env.TMPDIR, uid) : null;
    const granted = grantLayouts(req.policy, extras.grants);
    // One listing of the home for the caches and the command line (the caches add what they make to it).
    const look = extras.caches ? extras.homeLook : (extras.homeLook ?? absentInHome(req.env.HOME));
    const caches = extras.caches ?? projectCaches(req, profileDir, false, uid, look, extras.grants);
    const line = commandLine(req, bwrap, profileDir, { ...extras, protectedBinds, grantLayouts: granted, caches, ...(look ? { homeLook: look } : {}), ...(hold ? { protectedSeen: hold.seen } : {}), ...(rep ? { reportFile: rep.file } : {}) }, bounds, find);
    const r = rep;
    let read = false;
    return {
      argv: line,
      bwrapAt: 0,
      cgroup: b.cgroup,
      filter: filterOf(sp),
      // Read once, after the end; the report file goes with it.
      discarded: () => {
        if (!r || read) return null;
        read = true;
        try {
          const mounted = (builderFor() ?? bwrapBuilder).mounts(line).map((m) => m.at);
          return readDiscarded(r.file, req.env.HOME, mounted, L.discarded_entries);
        } finally {
          r.remove();
        }
      },
      env: sandboxEnv(req.env, req.confine.project, sp.set_env),
      error: commandError(req.argv[0] ?? '', req.cwd, req.env.PATH ?? '', find),
      release: () => {
        try {
          b.release();
        } finally {
          hold?.release();
        }
      },
      created: () => [
        ...(project && layout ? createdSince(req.policy, project, layout, held) : []),
        // In a folder granted writable: named by its full path.
        ...granted.flatMap((g) => createdSince(req.policy, g.root, g.layout, []).map((rel) => (rel === SCAN_INCOMPLETE ? rel : join(g.root, rel)))),
      ],
    };
  } catch (err) {
    bound?.release();
    hold?.release();
    rep?.remove();
    throw err;
  }
}

/** The gate env for a proxy's decisions: the spawn's store and policy, the project's trust read at each decision. */
function proxyGate(req: SpawnRequest): GateEnv {
  const project = req.confine.project;
  return {
    policy: req.policy,
    db: () => req.db,
    project: (db) => (project ? trustOf(db, project) : null),
  };
}

/** Appends the spawn row; when the store cannot take it (locked past the busy timeout, read-only), nothing starts. */
function recordSpawn(db: Db, kind: string, body: Record<string, unknown>): void {
  try {
    appendAudit(db, 'spawn', body);
  } catch (err) {
    throw new ScError('SC_STORE_FAILED', `the ${kind} was not started: its spawn row could not be recorded: ${(err as Error).message}`, { kind });
  }
}

/** In a list of created protected paths: the check after the process stopped at its limits, so more may have been made. */
export const SCAN_INCOMPLETE = '\u0000scan-incomplete';

/**
 * Protected paths there now that were not at the start; what was held read-only throughout cannot have been made inside.
 * A process that filled the project past the scan's limits (scan_entries, scan_depth) could hide a repository beyond
 * them: when the start's scan was whole and this one is not, the list says so (SCAN_INCOMPLETE).
 */
function createdSince(policy: Policy, project: string, start: ProtectedLayout, held: readonly string[]): string[] {
  const known = new Set([...start.entries.map((e) => e.rel.toLowerCase()), ...held.map((h) => h.toLowerCase())]);
  const now = protectedLayout(policy, project);
  const made = now.entries.filter((e) => !known.has(e.rel.toLowerCase()) && e.kind !== 'missing').map((e) => e.rel);
  return now.truncated && !start.truncated ? [...made, SCAN_INCOMPLETE] : made;
}

/** Decides the sandbox, refuses when it is required and missing, records the spawn. */
function prepare(ticket: GateTicket, req: SpawnRequest, gate = false): Prepared {
  assertTicket(ticket, SPAWN_ACTIONS[req.kind]);
  const support = sandboxSupport();
  if (support.level === 'none' && req.policy.sandbox.require) {
    throw new ScError('SC_SANDBOX_UNAVAILABLE', `${JSON.stringify(req.argv[0])} was not started: ${support.detail}, and policy/sandbox.json requires a sandbox`, { kind: req.kind });
  }
  let prepared: Prepared = { argv: [...req.argv], bwrapAt: null, cgroup: null, env: absolutePath(req.env), level: 'none', error: null, filter: null, release: () => {}, created: () => [], discarded: () => null };
  let grants = NO_GRANTS;
  if (support.level === 'bwrap') {
    const profileDir = profileOf(req.db);
    grants = boundaryOf(req, profileDir);
    // Only granted hosts: a proxy of its own, outside, for as long as the process lives.
    const proxy = proxied(req, grants) ? startNetProxy(ticket, { hosts: grants.hosts, gate: proxyGate(req), owner: ticket.owner, project: req.confine.project, limits: req.policy.limits.net_proxy }) : null;
    try {
      const inner = confinedCommand(req, support.bwrap as string, profileDir, undefined, { grants, proxy, report: REPORTED.has(req.kind), gate });
      prepared = { ...inner, level: 'bwrap', release: () => (proxy?.close(), inner.release()) };
    } catch (err) {
      proxy?.close();
      throw err;
    }
  }
  try {
    // Recorded before the process exists: a spawn the log does not know of cannot happen.
    const granted = grants.paths.length ? { grants: grants.paths.map((g) => ({ path: g.path, write: g.write, scope: g.scope, ...(g.secret ? { secret: true } : {}) })) } : {};
    const hosts = proxied(req, grants) ? { hosts: grants.hosts.map((h) => hostPortText(h)) } : {};
    recordSpawn(req.db, req.kind, { decision_id: ticket.decisionId, kind: req.kind, argv0: req.argv[0] ?? null, level: prepared.level, network: req.confine.network, ...(req.confine.network && req.confine.networkWhy ? { network_why: req.confine.networkWhy } : {}), ...granted, ...hosts, project: req.confine.project });
  } catch (err) {
    prepared.release();
    prepared.discarded();
    throw err;
  }
  return prepared;
}

/** The kinds told what they left in their private home and /tmp: a coding CLI's home is its own business, a probe writes nothing. */
const REPORTED = new Set<SpawnKind>(['command', 'background', 'mcp_server']);

/**
 * Starts a process under supervision, sandboxed where possible. stdin 'pipe' gives the caller the child's stdin.
 * Sandboxed, this process supervises bwrap itself (own-group.ts): no node process is started beside it. Otherwise,
 * and for a sandboxed start that cannot be forked or gated (an error is reported the same way), the node supervisor.
 */
export function supervise(ticket: GateTicket, req: SpawnRequest & { graceMs: number; stdin: 'pipe' | 'ignore' }): Supervised {
  assertTicket(ticket, SPAWN_ACTIONS[req.kind]);
  if (sandboxSupport().level === 'bwrap') {
    const p = prepare(ticket, req, true);
    if (p.level === 'bwrap' && !p.error) {
      const forked = forkSandboxed(p, req);
      if (forked && typeof forked !== 'string') return supervised(forked.child, ownGroup(forked.child, req.graceMs, forked.gate), p, ticket.decisionId, req);
      // No descriptor for the gate: the supervisor holds the sandbox's lifetime instead, as it did before.
      return underSupervisor(startSupervisor(req), forked === null ? ungated(p) : { ...p, error: forked }, ticket.decisionId, req);
    }
    return underSupervisor(startSupervisor(req), p, ticket.decisionId, req);
  }
  // Started first, with an empty environment and nothing to run: node's start-up there overlaps the
  // command line and the spawn row here. It starts nothing until the spec arrives on its fd 4, which
  // is written only once the start is recorded; a start refused below closes that fd unwritten.
  const sup = startSupervisor(req);
  let p: Prepared;
  try {
    p = prepare(ticket, req);
  } catch (err) {
    (sup.stdio[4] as Writable | null)?.end();
    for (const s of [sup.stdin, sup.stdout, sup.stderr, sup.stdio[3]]) s?.destroy();
    sup.on('error', () => {});
    throw err;
  }
  return underSupervisor(sup, p, ticket.decisionId, req);
}

/**
 * bwrap for a sandboxed start, as the supervisor would fork it: its own process group, fds 0-2 only
 * (fds.ts), the filter on a descriptor of its own, forked in root's pids cgroup; and the gate that
 * holds the command until this process says go (sandbox.ts GATE, own-group.ts). The error text
 * when it cannot be forked (the cgroup cannot be joined, the fork itself fails).
 */
function forkSandboxed(p: Prepared, req: SpawnRequest & { stdin: 'pipe' | 'ignore' }): { child: ChildProcess; gate: { socket: number; info: number } } | string | null {
  const why = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  if (p.cgroup) {
    try {
      joinCgroup(p.cgroup);
    } catch (err) {
      return `cannot join the sandbox's pids cgroup: ${why(err)}`;
    }
  }
  let s: ReturnType<typeof sealed> | null = null;
  try {
    s = sealed(p.argv, [req.stdin, 'pipe', 'pipe'], p.bwrapAt, undefined, p.filter, true);
    if (!s.gate) {
      s.feed();
      return null;
    }
    const child = spawn(s.argv[0] as string, s.argv.slice(1), { cwd: req.cwd, env: p.env, detached: true, stdio: s.stdio, shell: false });
    s.feed(child);
    return { child, gate: s.gate };
  } catch (err) {
    s?.feed();
    return `cannot start bwrap: ${why(err)}`;
  } finally {
    if (p.cgroup) leaveCgroup(p.cgroup);
  }
}

/** The same start without its gate (sandbox.ts GATE: the shell and its four arguments before the command). */
function ungated(p: Prepared): Prepared {
  const at = p.argv.indexOf(GATE_FD);
  return at < 4 ? p : { ...p, argv: [...p.argv.slice(0, at - 4), ...p.argv.slice(at + 1)] };
}

/** node dist/supervisor.cjs, waiting for its spec on fd 4. */
function startSupervisor(req: SpawnRequest & { stdin: 'pipe' | 'ignore' }): ChildProcess {
  const sup = spawn(process.execPath, [join(packageRoot(), 'dist', 'supervisor.cjs')], { cwd: req.cwd, env: {}, stdio: [req.stdin, 'pipe', 'pipe', 'pipe', 'pipe'], shell: false });
  // A supervisor that could not start has no reader: its own 'error' below says why.
  (sup.stdio[4] as Writable | null)?.on('error', () => {});
  return sup;
}

/** Hands the supervisor its spec and reads its pid and status lines from the lifeline. */
function underSupervisor(sup: ChildProcess, p: Prepared, decisionId: string, req: SpawnRequest & { graceMs: number }): Supervised {
  (sup.stdio[4] as Writable | null)?.end(JSON.stringify({ argv: p.argv, bwrap_at: p.bwrapAt, cwd: req.cwd, env: p.env, grace_ms: req.graceMs, sandboxed: p.level === 'bwrap', ...(p.cgroup ? { cgroup: p.cgroup } : {}), ...(p.filter ? { seccomp: p.filter.toString('base64') } : {}), ...(p.error ? { error: p.error } : {}) }));
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
  return supervised(sup, { pid, status, stop: () => life.end() }, p, decisionId, req);
}

/** What every supervised start gives its caller, whoever supervises it: the checks after the exit, the span. */
function supervised(process: ChildProcess, run: { pid: Promise<number | null>; status: Promise<SupervisorStatus>; stop: () => void }, p: Prepared, decisionId: string, req: SpawnRequest): Supervised {
  // Reported only after the whole group is gone, and with it the sandbox's mounts.
  const created = run.status.then(afterExit(p, decisionId, req));
  tel()?.track(`spawn ${req.kind}`, spawnAttrs(req.kind, req.argv[0], p.level, req.confine.network, decisionId), run.status.then((s) => ({ 'process.exit.code': s.code ?? undefined, 'shadowcode.spawn.outcome': s.outcome, 'shadowcode.spawn.signal': s.signal ?? undefined })));
  const discarded = created.then(() => discardedOf(p));
  return { process, level: p.level, pid: run.pid, status: run.status, stop: run.stop, created, explain: explainer(p, req), discarded };
}

/** The explanation of a start's failure, against the command line it was started with. */
function explainer(p: Prepared, req: SpawnRequest): Supervised['explain'] {
  return (output, code) => {
    if (p.level === 'none' || p.bwrapAt === null) return [];
    const sp = sandboxPolicy(req.policy);
    const builder = builderFor() ?? bwrapBuilder;
    const cap = req.policy.limits.sandbox.explain_bytes;
    return explainFailure(builder.mounts(p.argv.slice(p.bwrapAt)), output.length > cap ? output.slice(-cap) : output, code, {
      project: req.confine.project, profileDir: profileOf(req.db), home: req.env.HOME, path: req.env.PATH ?? '', cwd: req.cwd,
      hidden: hiddenPaths(sp, req.env.HOME), systemReadOnly: sp.system_read_only, server: req.kind === 'mcp_server',
    });
  };
}

/** What the process left in its private home and /tmp; never an error in the caller's path. */
function discardedOf(p: Prepared): Discarded | null {
  try {
    return p.discarded();
  } catch {
    return null;
  }
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

/**
 * Once the process is gone: the placeholders given back, then what it created among the
 * protected paths (a sandbox binds only what exists when it starts), recorded in the
 * audit log beside its spawn row. Never throws into the caller's path.
 */
const afterExit = (p: Prepared, decisionId: string, req: SpawnRequest) => (): string[] => {
  releaseQuietly(p)();
  let created: string[] = [];
  try {
    created = p.created();
    if (created.length > 0) appendAudit(req.db, 'protected_created', { decision_id: decisionId, kind: req.kind, project: req.confine.project, paths: created });
  } catch {
    /* the store is closing: the caller still gets the list */
  }
  return created;
};

/** Starts a process with no supervisor (it keeps its own lifetime), detached as the leader of its own group, sandboxed where possible. */
export function startDirect(ticket: GateTicket, req: SpawnRequest & { stdio: StdioOptions }): { child: ChildProcess; level: SandboxLevel; created: Promise<readonly string[]>; discarded: Promise<Discarded | null> } {
  assertTicket(ticket, SPAWN_ACTIONS[req.kind]);
  const p = prepare(ticket, req);
  let child: ChildProcess;
  let s: ReturnType<typeof sealed> | null = null;
  try {
    if (p.error) throw Object.assign(new Error(`spawn ${req.argv[0]} ${p.error}`), { code: p.error });
    // What this process inherited itself (a descriptor its shell left open) never reaches the child.
    s = sealed(p.argv, req.stdio, p.bwrapAt, undefined, p.filter);
    const sl = s;
    child = inCgroup(p.cgroup, () => spawn(sl.argv[0] as string, sl.argv.slice(1), { cwd: req.cwd, env: p.env, detached: true, stdio: sl.stdio, shell: false }));
    s.feed(child);
  } catch (err) {
    // The filter's descriptor of this start is closed with it.
    s?.feed();
    p.release();
    discardedOf(p);
    throw err;
  }
  // bwrap exits only after the sandbox's first process, and with it the PID namespace, is gone.
  const after = afterExit(p, ticket.decisionId, req);
  let done: Promise<readonly string[]> | null = null;
  const created = new Promise<readonly string[]>((resolve) => {
    const end = () => resolve((done ??= Promise.resolve(after())));
    child.once('exit', end);
    child.once('error', end);
  });
  tel()?.track(`spawn ${req.kind}`, spawnAttrs(req.kind, req.argv[0], p.level, req.confine.network, ticket.decisionId), exitOf(child));
  return { child, level: p.level, created, discarded: created.then(() => discardedOf(p)) };
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
  assertTicket(ticket, SPAWN_ACTIONS.helper);
  const support = sandboxSupport();
  const sp = sandboxPolicy(req.policy);
  const name = basename(req.program).replace(/\.c?js$/, '');
  if (support.level === 'none' && sp.require) {
    throw new ScError('SC_SANDBOX_UNAVAILABLE', `the ${name} helper was not started: ${support.detail}, and policy/sandbox.json requires a sandbox`, { kind: 'helper' });
  }
  const argv = [process.execPath, req.program];
  const env = absolutePath({ PATH: process.env.PATH ?? '' });
  const bounds = { tmp_bytes: req.policy.limits.sandbox.tmp_bytes, features: support.features };
  const boxed =
    support.level === 'bwrap'
      ? (builderFor() ?? bwrapBuilder).helperLine({ bwrap: support.bwrap as string, policy: sp, argv, reads: [...helperFiles(req.program), ...req.reads], writes: req.writes, unset: req.policy.environment.deny, home: process.env.HOME, bounds })
      : argv;
  recordSpawn(req.db, 'helper', { decision_id: ticket.decisionId, kind: 'helper', argv0: name, level: support.level, network: false, project: req.project });
  const s = sealed(boxed, req.stdio, support.level === 'bwrap' ? 0 : null, undefined, support.level === 'bwrap' ? filterOf(sp) : null);
  const child = spawn(s.argv[0] as string, s.argv.slice(1), { cwd: '/', env, stdio: s.stdio, shell: false });
  s.feed(child);
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
  assertTicket(ticket, SPAWN_ACTIONS.engine);
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
