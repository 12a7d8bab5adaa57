/*
 * The OS sandbox: whether one can be made here, and the bubblewrap command line
 * that confines one process, built from policy/sandbox.json.
 *
 *   sandboxArgv(plan) ─► bwrap --die-with-parent --new-session --unshare-all [--share-net]
 *                          --cap-drop ALL --unshare-user --disable-userns (no capabilities, also
 *                          for root, and no user namespace inside to get them back)
 *                          system dirs read-only, fresh /proc (its sys read-only) and /dev, private /tmp and home
 *                          (tmpfs of limits.sandbox size), what the executable needs to start
 *                          read-only, a toolchain's own state read-write, what in it
 *                          configures what runs outside later and the executable's own
 *                          install read-only, or a private copy,
 *                          the project read-write, then what the user granted (grants.ts:
 *                          `sandbox allow`, a definition's sandbox; hidden paths covered again),
 *                          its protected paths read-only (the folders above a nested one
 *                          pinned: not renamable),
 *                          the profile covered wherever it would show
 *                          ─► -- [sh -c 'ulimit -u N; exec "$@"'] [node net-bridge SOCKET --] argv
 *                             (the bridge when only granted hosts may be reached: net-proxy.ts)
 *
 * Mount order matters: later mounts sit on top of earlier ones, so the private
 * home comes before the project (a project under the home reappears) and the
 * cover over the profile comes last (a profile inside the project disappears).
 */
import { accessSync, constants, existsSync, lstatSync, readlinkSync, realpathSync, type Stats, statSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import { realOrSelf as real, realPath } from '../../util/confine.js';
import { listDirNoFollow, readUserFile } from '../../util/safe-read.js';
import { type CachePlan, cacheArgs } from './caches.js';
import { GATE_FD } from './fds.js';
import { type Boundary, cover, coverHidden, type DeclaredSandbox, grantArgs, hiddenPaths } from './grants.js';
import { absentInHome, expandHome, guardedStatePaths, type HomeLook, type NamedLimits, privateStatePaths, readOnlyStateArgs, within } from './state-paths.js';
import { type ToolchainView, toolchainView } from './toolchains.js';

export type SandboxLevel = 'bwrap' | 'none';

export interface SandboxSupport {
  readonly level: SandboxLevel;
  /** The bwrap executable, when level is bwrap. */
  readonly bwrap: string | null;
  /** One line: why there is no sandbox, or what confines processes. */
  readonly detail: string;
}

/** What one process may see beyond the system: its project (read-write), the network or not. */
export interface Confinement {
  /** The project's real path, bound read-write; null for a process with no project (a version probe). */
  readonly project: string | null;
  readonly network: boolean;
  /** Why the network is open, for the audit row (a runner reaches its model). */
  readonly networkWhy?: string;
  /** The profile directory: never visible inside. */
  readonly profileDir: string | null;
  /** More folders the process may read (a runner: the relay program and the node that runs it). */
  readonly readable?: readonly string[];
  /** More folders bound read-write at the same path (a runner: its run directory with the relay socket). */
  readonly writable?: readonly string[];
  /** The tool_state keys that apply; by default the executable's own name when the argv is trusted (reviewed), none otherwise. */
  readonly stateKeys?: readonly string[];
  /** Private copies of tool_state_private files (real path ─► the copy), bound read-write in their place; a file without one is read-only. */
  readonly copies?: ReadonlyMap<string, string>;
  /** What a server's definition declares it needs (its sandbox key); the spawn point checks and binds it. */
  readonly declared?: DeclaredSandbox;
}

/** What this bwrap can do beyond the basics (both came with bubblewrap 0.8.0); found by the probe. */
export interface BwrapFeatures {
  /** `--size` before `--tmpfs` (not for a setuid bwrap). */
  readonly size: boolean;
  /** `--disable-userns`: no new user namespace inside. */
  readonly disableUserns: boolean;
}

/** The bounds of one sandbox (policy limits.sandbox), and what runs inside before the command to set the process bound. */
export interface SandboxBounds {
  readonly tmp_bytes: number;
  readonly home_bytes: number;
  /** `sh -c 'ulimit …; exec "$@"'` for an ordinary user; nothing for root (a cgroup, outside) or where there is no bound. */
  readonly inner: readonly string[];
  readonly features: BwrapFeatures;
}

export interface SandboxPlan extends Confinement {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly policy: SandboxPolicy;
  readonly bwrap: string;
  /** The argv comes from the user's own definition, not from a model. */
  readonly trusted: boolean;
  /** Variable names that never reach the process, even if something between us and bwrap added them. */
  readonly unset: readonly string[];
  /** How much of a CLI's protected settings is searched for the programs they name (limits.runners). */
  readonly stateLimits: NamedLimits;
  /**
   * More protected project paths (project-relative) found at this start, bound read-only
   * where they exist: nested repositories and host configs, what a protected link leads
   * to, what git config names (policy/protected-paths.json, src/policy/protected-scan.ts).
   */
  readonly protectedBinds?: readonly string[];
  /** Project paths (absolute) this start's holds just found there, with their lstat (holds.ts): not looked at again. */
  readonly protectedSeen?: ReadonlyMap<string, Stats>;
  /** Sizes and the process bound; without them the tmpfs folders are the kernel's default size. */
  readonly bounds?: SandboxBounds;
  /** What the user granted beyond the defaults, already checked (grants.ts). */
  readonly grants?: Boundary;
  /** Only granted hosts may be reached: the proxy's socket (in its own folder), bound in, and the bridge that starts the command. */
  readonly proxy?: { readonly dir: string; readonly socket: string; readonly bridge: string; readonly node: string };
  /** The user's toolchains (toolchains.ts); found here when not given. */
  readonly tools?: ToolchainView;
  /** How many entries of a PATH folder are looked at for links (limits.sandbox.path_entries). */
  readonly pathEntries?: number;
  /** The project's private package caches (caches.ts); none when not given. */
  readonly caches?: CachePlan;
  /** The start's listing of the home (absentInHome), taken before its caches were made and kept true since; listed here when not given. */
  readonly homeLook?: HomeLook;
  /**
   * The protected paths (relative, protected-scan.ts) found in each folder granted writable: a
   * repository or a host config there is held read-only like the project's own.
   */
  readonly grantProtected?: ReadonlyArray<{ readonly root: string; readonly rels: readonly string[] }>;
  /**
   * A file of ours, bound in at its own path, where a shell that runs first inside lists what the
   * process left in its private home and /tmp when it ends (at most `entries` lines): those files
   * are discarded with the sandbox, and its result says so (discarded.ts).
   */
  readonly report?: { readonly file: string; readonly entries: number };
  /**
   * Hold the command until its starter says go (GATE): a start whose starter supervises bwrap
   * itself, with no supervisor process between them (own-group.ts).
   */
  readonly gate?: boolean;
}

/**
 * The shell that runs the command and, when it has ended (also by TERM: the trap lets the shell
 * outlive the signal its command got), lists the files left on the private home and /tmp (-xdev:
 * not what is bound into them) into the report file. Its exit status is the command's.
 *
 * Starting `find` was most of a sandboxed start's cost (another program to load, in every start),
 * and nearly every command leaves nothing there. So the shell first looks itself (`w`, builtins
 * only): every entry of the home and /tmp is a mount point the command line made (`$k`: skipped,
 * a command cannot unmount or rename one), or a folder on the way to one (`$a`: looked into);
 * any other entry (a file, a link, a folder of its own, a mount point moved aside with a folder
 * renamed above it) and find runs and lists exactly as before. What was made as a mount point
 * but replaced (its folder above renamed, a new one made in its place) leaves the renamed folder
 * behind: an entry of the second kind. A link the command line made (a private cache's link
 * into its folder, a link on the way to a PATH folder) can be removed or replaced, unlike a mount
 * point: first `v` checks that each is still a link to what it was made to lead to (`$l`; `-ef`:
 * the same file), else find runs; then the look skips them as it skips mount points. Since a known
 * entry is a mount point or a link `v` has just checked, the look names it without a stat, and
 * lists each folder with two patterns (`.*` and `*`; `.` and `..` skipped, an unmatched pattern
 * left as it is): the fewer calls, the cheaper every start. find lists no
 * link that leads into the project's private caches (`$c`): what is there is kept, and a cache's
 * own link moved aside with a folder renamed above it is not the command's file.
 */
const WALK = 'w() { for e in "$1"/.* "$1"/*; do case "$k" in *"\n$e\n"*) continue;; esac; case "$a" in *"\n$e\n"*) ! [ -L "$e" ] && [ -d "$e" ] && w "$e" && continue; return 1;; esac; case "$e" in "$1/." | "$1/..") continue;; "$1/*" | "$1/.*") [ -e "$e" ] || [ -L "$e" ] || continue;; esac; return 1; done; }';
/** Each link the command line made is still a link, to what it was made to lead to (`$l`: a link and its target, a line each). */
const LINKS = 'v() { o=$IFS; IFS=\'\n\'; set -f; set -- $l; IFS=$o; set +f; while [ $# -gt 1 ]; do [ -L "$1" ] && [ "$1" -ef "$2" ] || return 1; shift 2; done; }';
const REPORT = `trap : TERM INT HUP; f=$1 h=$2 k=$3 a=$4 l=$5 c=$6; shift 6; "$@"; s=$?; ${WALK}; ${LINKS}; v && { [ -z "$h" ] || w "$h"; } && w /tmp || find \${h:+"$h"} /tmp -xdev \\( -type f -o -type l ! -lname "$c" \\) -fprint "$f" 2>/dev/null; exit $s`;
/** The process bound's shell (bounds.ts) ends by exec'ing the command; the report shell takes its limit over instead, saving a shell. */
const EXEC_TAIL = 'exec "$@"';
/**
 * The sandbox's first process when its starter supervises bwrap itself (own-group.ts). bwrap ties
 * itself to its parent (--die-with-parent) only after it has made the sandbox, and the sandbox's
 * first process to bwrap only right before its exec: a starter killed before both were armed would
 * leave the command running with no one to end it. So the command waits here: this shell says
 * it is running (so the exec, and the tie before it, is done) on a socket to the starter, which
 * answers go only once bwrap has also reported its own tie (--info-fd, written after it). A
 * starter gone by then closes the socket: the read fails and nothing runs. The socket is closed
 * before the exec, so the command never has it. $1: its descriptor (fds.ts puts it in place of
 * GATE_FD).
 */
const GATE = 'g=$1; shift; printf r >&"$g" && read -r x <&"$g" && [ "$x" = go ] || exit 125; eval "exec $g>&-"; exec "$@"';
/** Where the report file is inside: a folder of the sandbox's own root, no host folder. */
export const REPORT_AT = '/run/shadowcode/report';

/** How many arguments follow each bwrap option the command line uses, and which of them is where it makes something. */
const OPTS: Readonly<Record<string, readonly [number, number]>> = { '--bind': [2, 2], '--ro-bind': [2, 2], '--bind-try': [2, 2], '--ro-bind-try': [2, 2], '--symlink': [2, 2], '--tmpfs': [1, 1], '--dev': [1, 1], '--proc': [1, 1], '--remount-ro': [1, 0], '--size': [1, 0], '--setenv': [2, 0], '--unsetenv': [1, 0], '--chdir': [1, 0] };

/**
 * What the command line makes inside the private `roots` (the home, /tmp), for the report shell's
 * look: each path it mounts or links there, each folder above one of them (made on the way), each
 * list one path a line with a line before and after; and each link with what it leads to (made
 * absolute), a line each. A path with a line break in it is in none: the look then meets it as an
 * entry of its own, and find runs.
 */
function madeWithin(line: readonly string[], roots: readonly string[]): { mounts: string; folders: string; links: string } {
  const mounts = new Set<string>();
  const folders = new Set<string>();
  const links = new Map<string, string>();
  for (let i = 1; i < line.length; i++) {
    const opt = line[i] as string;
    const o = OPTS[opt];
    if (!o) continue;
    const at = o[1] ? (line[i + o[1]] as string) : null;
    const to = opt === '--symlink' ? (line[i + 1] as string) : null;
    i += o[0];
    if (!at || at.includes('\n') || to?.includes('\n')) continue;
    const root = roots.find((r) => within(at, r) && at !== r);
    if (!root) continue;
    mounts.add(at);
    if (to !== null) links.set(at, resolve(dirname(at), to));
    for (let d = dirname(at); d !== root && within(d, root); d = dirname(d)) folders.add(d);
  }
  const lines = (s: Iterable<string>) => `\n${[...s].join('\n')}\n`;
  return { mounts: lines(mounts), folders: lines(folders), links: [...links].map(([at, to]) => `${at}\n${to}`).join('\n') };
}

/** A path as a find -name/-lname pattern that matches only itself. */
const literalPattern = (p: string) => p.replace(/[*?[\]\\]/g, '\\$&');

/** stat without a throw for what a lookup treats as absent: missing, or below a folder we may not search (a root PATH entry seen by another user). */
function statQuiet(p: string): ReturnType<typeof statSync> {
  try {
    return statSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** The last PATH parsed, and its absolute folders in order, each once (a folder named twice answers the same twice). */
let parsed: { path: string; dirs: readonly string[] } | null = null;
function searchDirs(path: string): readonly string[] {
  if (parsed?.path !== path) parsed = { path, dirs: [...new Set(path.split(delimiter).filter((d) => d && isAbsolute(d)))] };
  return parsed.dirs;
}

/** An executable file of that name in PATH's absolute directories. */
export function findOnPath(name: string, path: string): string | null {
  for (const dir of searchDirs(path)) {
    const p = join(dir, name);
    // No exception for the common miss: a thrown ENOENT per PATH entry was most of a spawn's own cost.
    if (!statQuiet(p)?.isFile()) continue;
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not executable: execvp goes on too */
    }
  }
  return null;
}

/** One spawn's PATH lookups, each made once (the command error, its install and its interpreter all ask). */
export type Lookup = (name: string) => string | null;
export function pathLookup(path: string): Lookup {
  const seen = new Map<string, string | null>();
  return (name) => {
    let hit = seen.get(name);
    if (hit === undefined) seen.set(name, (hit = findOnPath(name, path)));
    return hit;
  };
}

/** The project paths kept read-only inside the sandbox. One place, so the list can come from another policy file later. */
export function protectedProjectPaths(policy: SandboxPolicy): readonly string[] {
  return policy.project_read_only;
}

/** Where a command is found: a path as given (against cwd), a bare name on PATH. */
function resolveCommand(cmd: string, cwd: string, find: Lookup): string | null {
  if (cmd.includes('/')) return resolve(cwd, cmd);
  return find(cmd);
}

const exists = (p: string) => statQuiet(p) !== undefined;

/** What one start asks about paths (real path, whether there), each asked once: nothing changes them while its command line is built. */
export interface PathFacts {
  readonly real: (p: string) => string;
  readonly exists: (p: string) => boolean;
}
function once<T>(look: (p: string) => T): (p: string) => T {
  const known = new Map<string, T>();
  return (p) => {
    if (known.has(p)) return known.get(p) as T;
    const v = look(p);
    known.set(p, v);
    return v;
  };
}
/** Fresh for each start: never an answer kept from an earlier one (a folder may have gone, a link changed). */
export function pathFacts(): PathFacts {
  const there = new Set<string>();
  const isThere = once((p: string) => {
    const e = exists(p);
    if (e) there.add(p);
    return e;
  });
  // What stat just found has an entry to resolve: no lstat first (realOrSelf's guard against a thrown miss).
  const realOf = once((p: string) => {
    if (!there.has(p)) return real(p);
    try {
      return realPath(p);
    } catch {
      return p;
    }
  });
  return { real: realOf, exists: isThere };
}

/** Why a command cannot start (ENOENT, EACCES), as spawn would say it; null when it can. Inside bwrap the reason would be lost in bwrap's own exit. */
export function commandError(cmd: string, cwd: string, path: string, find: Lookup = pathLookup(path)): string | null {
  if (!cmd) return 'ENOENT';
  if (!cmd.includes('/')) {
    if (find(cmd)) return null;
    // Found but not executable still says EACCES, like execvp.
    for (const dir of path.split(delimiter)) if (dir && isAbsolute(dir) && existsSync(join(dir, cmd))) return 'EACCES';
    return 'ENOENT';
  }
  const abs = resolve(cwd, cmd);
  try {
    if (!statSync(abs).isFile()) return 'EACCES';
    accessSync(abs, constants.X_OK);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'ENOENT' : 'EACCES';
  }
}

/** The words of a script's #! line; nothing for a binary, a FIFO or a device (read through the bounded primitive). */
function shebang(file: string): string[] {
  try {
    const text = readUserFile(file, { cap: 256, kind: 'executable', overflow: 'truncate' }).bytes.toString('latin1');
    if (!text.startsWith('#!')) return [];
    return (text.slice(2).split('\n')[0] as string).trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * The directory an executable is installed in: its bin directory's parent (a
 * version manager's node/vX, a toolchain root), never the home itself or `/`.
 */
export function installRoot(file: string, home: string | undefined): string {
  const dir = dirname(file);
  const up = basename(dir) === 'bin' ? dirname(dir) : dir;
  if (up === '/' || (home && within(home, up))) return dir;
  return up;
}

/**
 * What a file named in argv needs: inside a node_modules tree, that whole tree
 * (its dependencies are hoisted beside it); else the nearest folder holding a
 * package.json (its package); else its own folder. Never the home or above.
 */
function packageRoot(file: string, home: string | undefined): string {
  const dir = statSync(file).isDirectory() ? file : dirname(file);
  const nm = dir.split(sep).indexOf('node_modules');
  if (nm > 0) return dir.split(sep).slice(0, nm + 1).join(sep);
  for (let d = dir; d !== '/' && !(home && within(home, d)); d = dirname(d)) {
    if (exists(join(d, 'package.json'))) return d;
  }
  return dir;
}

/**
 * A package folder, and where its node_modules really is when that is a link (a git
 * worktree sharing another checkout's install). Only a folder that is itself named
 * node_modules: a link named so cannot make any other folder visible.
 */
function addPackage(roots: Set<string>, root: string): void {
  roots.add(root);
  const nm = join(root, 'node_modules');
  try {
    if (!lstatSync(nm).isSymbolicLink()) return;
    const target = realpathSync(nm);
    if (basename(target) === 'node_modules' && statSync(target).isDirectory()) roots.add(target);
  } catch {
    /* none, or a dangling link */
  }
}

/**
 * Directories the process needs readable to start, beyond the system ones.
 * A model-chosen argv (`trusted` false) gets only what PATH finds for a bare
 * command name: otherwise naming `/home/u/.ssh/x` would make that folder visible.
 * A user's own definition (a server, a runner) also gets the folders of the
 * absolute paths its argv names (the script it runs, a config file).
 */
export function startupRoots(argv: readonly string[], cwd: string, env: Record<string, string>, policy: SandboxPolicy, trusted: boolean, find: Lookup = pathLookup(env.PATH ?? ''), facts: PathFacts = pathFacts()): string[] {
  const { real, exists } = facts;
  const home = env.HOME;
  const roots = new Set<string>();
  const addExe = (cmd: string) => {
    const found = resolveCommand(cmd, cwd, find);
    if (!found || !exists(found)) return null;
    roots.add(installRoot(found, home));
    roots.add(installRoot(real(found), home));
    return found;
  };
  const first = argv[0] ?? '';
  // A bare name is found on the user's PATH: what it resolves to is the user's install, not the model's choice.
  const fromUser = trusted || !first.includes('/');
  if (fromUser) addExe(first);
  // A user's own script (a runner entry, a server definition) also needs its package beside it.
  const own = trusted ? resolveCommand(first, cwd, find) : null;
  if (own && exists(own)) addPackage(roots, packageRoot(real(own), home));
  const script = resolveCommand(first, cwd, find);
  if (script && exists(script)) {
    // A script's interpreter must start too: `#!/usr/bin/env node` names it on PATH; an absolute
    // interpreter counts only when the script itself is the user's (a model can write a project script).
    const line = shebang(real(script));
    const viaEnv = line[0] !== undefined && basename(line[0]) === 'env';
    const interp = viaEnv ? line.slice(1).find((w) => !w.startsWith('-') && !w.includes('=')) : line[0];
    if (interp && (viaEnv ? !interp.includes('/') || fromUser : fromUser)) addExe(interp);
  }
  for (const a of trusted ? argv.slice(1) : []) {
    const value = a.startsWith('/') ? a : /^--?[\w-]+=\//.test(a) ? a.slice(a.indexOf('=') + 1) : null;
    if (value && exists(value)) addPackage(roots, packageRoot(real(value), home));
  }
  for (const p of policy.extra_read_only) {
    const abs = expandHome(p, home);
    if (abs) roots.add(abs);
  }
  return [...roots].filter((r) => r !== '/' && exists(r));
}

/**
 * The policy's system_hidden paths as they exist here: a `*` in the last part matches
 * the names in that folder (`/etc/ssh/*_key`); a link is left alone (its target, if it is
 * one of these, is listed itself).
 */
export function systemHidden(patterns: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of patterns) {
    const name = basename(p);
    if (!name.includes('*')) {
      if (lstatSync(p, { throwIfNoEntry: false })) out.push(p);
      continue;
    }
    const re = new RegExp(`^${name.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    // No such folder, or not ours to read: nothing to cover.
    const names = (listDirNoFollow(dirname(p)) ?? []).map((d) => d.name);
    for (const n of names.sort()) if (re.test(n)) out.push(join(dirname(p), n));
  }
  return out;
}

/**
 * The part of every command line that depends only on the policy's system
 * folders: the namespaces, those folders read-only (a top-level link recreated
 * as the link), fresh /proc and /dev, a private /tmp, and the system files no
 * one inside may read covered (system_hidden: root inside is the host's uid 0).
 * The folders are read once per policy (the system's own layout does not change
 * while shadowcode runs); the files to cover are looked for at every start, since
 * one made later (a host key, a keytab) must be covered from the next start on.
 */
const systemParts = new WeakMap<SandboxPolicy, { args: readonly string[]; bound: readonly string[] }>();
function systemPart(policy: SandboxPolicy): { args: readonly string[]; bound: readonly string[] } {
  let part = systemParts.get(policy);
  if (!part) {
    const args: string[] = [];
    const bound: string[] = [];
    for (const dir of policy.system_read_only) {
      const st = lstatSync(dir, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else {
        args.push('--ro-bind', dir, dir);
        bound.push(dir);
      }
    }
    // /proc/sys read-only on top of the fresh /proc: bwrap covers it only where its folder is
    // writable, and it is not (0555), while its files check only the uid. Root inside is the
    // host's uid 0 (with no capability), so it would write the host's sysctls:
    // kernel.core_pattern = "|/project/x" runs x as root on the host at the next crash.
    args.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--dev', '/dev');
    systemParts.set(policy, (part = { args, bound }));
  }
  // After the folders that show them; only what lies in a shown folder needs a cover.
  const covers: string[] = [];
  for (const p of systemHidden(policy.system_hidden)) if (part.bound.some((b) => within(p, b))) covers.push(...cover(p));
  return { args: [...part.args, ...covers], bound: part.bound };
}

/**
 * No capabilities, also when root starts bwrap (it keeps them for uid 0, in a user
 * namespace that owns the sandbox's mounts: remount and umount would work), and no
 * new user namespace inside, which would hand a process a full set again.
 */
function lockdown(f: BwrapFeatures | undefined): string[] {
  return ['--cap-drop', 'ALL', ...(f?.disableUserns === false ? [] : ['--unshare-user', '--disable-userns'])];
}

/** A private tmpfs at `dir`, of `bytes` at most where bwrap can bound it. */
function tmpfs(dir: string, bytes: number | undefined, f: BwrapFeatures | undefined): string[] {
  return [...(bytes && f?.size !== false ? ['--size', String(bytes)] : []), '--tmpfs', dir];
}

/** Whether any part of `path` below `base` (the path itself included) is a link. */
function linkBetween(base: string, path: string): boolean {
  for (let d = path; d !== base && within(d, base); d = dirname(d)) {
    if (lstatSync(d, { throwIfNoEntry: false })?.isSymbolicLink()) return true;
  }
  return false;
}

/**
 * The project's protected paths, read-only: each that exists and is not a link (the
 * top-level ones from the policy, and what the spawn point found below the top, behind
 * protected links and named by git config). Absent here means absent for good: the spawn
 * point made a placeholder for each path it holds (holds.ts), so what is still missing
 * could not be made; a link is never bound (its target, when inside the project, is in
 * the list itself). A nested path's folders inside the project are bound onto themselves
 * first, still writable: a mount point cannot be renamed, so `lib/` cannot be moved aside
 * with its read-only `.git` and a new one put in its place. Pins go outer first and all
 * before the read-only binds, and never over a folder holding something mounted earlier in
 * `before` (a pin would show the host's writable folder over it). `seen`: what this start's holds
 * just found there (holds.ts), not looked at again.
 */
function protectedArgs(project: string, rels: readonly string[], before: readonly string[], seen?: ReadonlyMap<string, Stats>): string[] {
  const earlier: string[] = [];
  for (let i = 0; i < before.length - 2; i++) if (before[i] === '--ro-bind' || before[i] === '--bind') earlier.push(before[i + 2] as string);
  const binds: string[] = [];
  for (const rel of new Set(rels)) {
    const abs = join(project, rel);
    const st = seen?.get(abs) ?? lstatSync(abs, { throwIfNoEntry: false });
    if (!st || st.isSymbolicLink() || !within(abs, project) || abs === project || linkBetween(project, dirname(abs))) continue;
    if (binds.some((b) => within(abs, b))) continue;
    binds.push(abs);
  }
  // A path inside another one that is read-only anyway needs nothing of its own.
  const kept = binds.filter((b) => !binds.some((o) => o !== b && within(b, o)));
  const pins = new Set<string>();
  for (const b of kept) {
    for (let d = dirname(b); d !== project && within(d, project); d = dirname(d)) {
      if (!earlier.some((e) => e !== d && within(e, d))) pins.add(d);
    }
  }
  const outerFirst = (a: string, b: string) => a.split(sep).length - b.split(sep).length;
  return [...[...pins].sort(outerFirst).flatMap((d) => ['--bind', d, d]), ...kept.sort(outerFirst).flatMap((b) => ['--ro-bind', b, b])];
}

/** The full bwrap command line that runs plan.argv confined. */
export function sandboxArgv(plan: SandboxPlan & { find?: Lookup }): string[] {
  const f = plan.bounds?.features;
  const out = [plan.bwrap, '--die-with-parent', '--new-session', '--unshare-all', ...lockdown(f)];
  if (plan.network) out.push('--share-net');
  const system = systemPart(plan.policy);
  out.push(...system.args, ...tmpfs('/tmp', plan.bounds?.tmp_bytes, f));
  const bound: string[] = [...system.bound];
  const home = plan.env.HOME;
  if (home && isAbsolute(home) && home !== '/') out.push(...tmpfs(home, plan.bounds?.home_bytes, f));
  // Outside the home and /tmp, so the process sees its private folders as empty as ever.
  if (plan.report) out.push('--bind', plan.report.file, REPORT_AT);
  // ── The user's toolchains (toolchains.ts): every PATH folder and the install behind it, what the
  // environment names, read-only, for the command and everything it starts. Never the profile or the
  // project from here, nothing in a hidden path, and a hidden path inside one is covered again.
  const hidden = hiddenPaths(plan.policy, home);
  // Each looked up once for this start (the covers below ask again): about 50 paths, nearly all missing.
  const absent = plan.homeLook ?? absentInHome(home);
  const facts = pathFacts();
  const real = facts.real;
  const realHidden = new Map(hidden.map((h) => [h, absent(h) ? h : real(h)]));
  const realOf = (p: string) => realHidden.get(p) ?? real(p);
  const hiddenAll = [...new Set([...hidden, ...realHidden.values()])];
  const profile = plan.profileDir ? real(plan.profileDir) : null;
  const allowed = (p: string) => {
    const r = real(p);
    return !hiddenAll.some((h) => within(p, h) || within(r, h)) && !(profile && (within(p, profile) || within(r, profile))) && !(plan.project && (within(p, plan.project) || within(r, plan.project)));
  };
  const tools = plan.tools ?? toolchainView(plan.env, plan.policy, plan.project, plan.pathEntries ?? 4096);
  const shown: string[] = [];
  const privateHome = home && isAbsolute(home) && home !== '/' ? home : null;
  for (const p of tools.read) {
    if (!allowed(p) || bound.some((b) => within(p, b))) continue;
    // -try: a toolchain removed since it was found is not there, rather than a start that fails.
    // In the private home or /tmp such a path is left out here (a stat, nearly always of one or two
    // paths): bwrap would make no mount point there, yet the report shell and the failure
    // explanations take every mount of this line as made, and what the command itself makes at
    // that path (a ~/.pyenv of its own) would go unnamed.
    if (((privateHome && within(p, privateHome)) || within(p, '/tmp')) && !exists(p)) continue;
    out.push('--ro-bind-try', p, p);
    bound.push(p);
    shown.push(p);
  }
  const extra = (plan.readable ?? []).filter((r) => isAbsolute(r) && r !== '/' && existsSync(r));
  const roots = [...startupRoots(plan.argv, plan.cwd, plan.env, plan.policy, plan.trusted, plan.find, facts), ...extra];
  for (const root of roots) {
    if (plan.project && within(real(root), plan.project)) continue;
    if (bound.some((b) => within(root, b))) continue;
    out.push('--ro-bind', root, root);
    bound.push(root);
    shown.push(root);
  }
  out.push(...coverHidden(hiddenAll, shown, realOf));
  // Links on the way to a PATH folder (a Nix profile, an fnm shell), as the host has them, where nothing shows them already.
  for (const [at, to] of tools.links) {
    if (bound.some((b) => within(at, b)) || !allowed(at) || !(home && within(at, home))) continue;
    out.push('--symlink', to, at);
  }
  // ── The project's private package caches (caches.ts): written there, never in the user's own.
  if (plan.caches) {
    // A cache inside something read-only shown above needs its mount point there already.
    const inShown = (at: string) => bound.some((b) => within(at, b) && at !== b);
    const usable = { ...plan.caches, binds: plan.caches.binds.filter((c) => !inShown(c.at) || existsSync(c.at)) };
    // A link where nothing shown holds the path (the private home makes it), and no other cache lies in or above it.
    const linkable = (at: string) => !inShown(at) && !at.includes('\n') && !usable.binds.some((o) => o.at !== at && (within(o.at, at) || within(at, o.at)));
    const caches = cacheArgs(usable, linkable);
    out.push(...caches.args);
    bound.push(...caches.bound);
  }
  // A toolchain's own state (a coding CLI's login and settings) stays its own, read-write; a missing one is not created.
  // Only for an argv someone reviewed (a runner, a server's definition): a model that names its own
  // ./codex must not get ~/.codex (its tokens) read-write by the name alone.
  const keys = plan.stateKeys ?? (plan.trusted ? [basename(plan.argv[0] ?? '')] : []);
  const state = keys.flatMap((k) => (Object.hasOwn(plan.policy.tool_state, k) ? (plan.policy.tool_state[k] ?? []) : [])).map((p) => expandHome(p, home));
  const writable: string[] = [];
  for (const abs of [...new Set([...state, ...(plan.writable ?? [])])]) {
    // Never the home itself or a folder above it: that would undo the private home.
    if (!abs || !isAbsolute(abs) || !existsSync(abs) || (home && within(home, abs))) continue;
    out.push('--bind', abs, abs);
    bound.push(abs);
    writable.push(abs);
  }
  if (plan.project) {
    out.push('--bind', plan.project, plan.project);
    bound.push(plan.project);
  }
  // ── What the user granted: after the project (a grant above the project binds the project again
  // in its place), before the pins and the protected paths below, so that no grant can make a
  // protected path writable, and before the profile's cover, so that none can show the profile.
  const granted = plan.grants?.paths.length ? grantArgs(plan.grants.paths, hiddenPaths(plan.policy, home), [...writable, ...(plan.project ? [plan.project] : [])]) : null;
  if (granted) {
    out.push(...granted.args);
    bound.push(...granted.bound);
  }
  if (plan.proxy) {
    // The proxy's socket (read-only: connecting needs no write, and its folder stays ours), the
    // bridge program and the node that runs it; nothing else of ours.
    out.push('--ro-bind', plan.proxy.socket, plan.proxy.socket, '--ro-bind', plan.proxy.bridge, plan.proxy.bridge);
    const node = installRoot(real(plan.proxy.node), home);
    if (!bound.some((b) => within(node, b))) out.push('--ro-bind', node, node);
  }
  // ── end of the grants
  // What in that state decides what the toolchain runs unsandboxed later (hooks and the
  // scripts they name, MCP servers), and the real file of each private one: read-only on
  // top of every writable place that shows it, the project included, so these come after
  // it, in one list (its folder pins first, then every read-only bind). What is missing, or
  // a link, cannot be covered: the runner reports any change to it (state-paths.ts).
  const open = [...writable, ...(plan.project ? [plan.project] : []), ...(granted?.writable ?? [])];
  // A link (a dotfiles checkout) shows what it points to, as a bind of the file would.
  const privates = home ? privateStatePaths(plan.policy, keys, home).filter((abs) => within(abs, home) && statQuiet(abs)?.isFile()) : [];
  // The executable's own install inside its state folder (Claude Code in ~/.claude/local): read-only
  // again on top of that folder, or the CLI could rewrite what the user runs next time.
  const installs = [...tools.read, ...roots].filter((r) => writable.some((w) => within(real(r), real(w))));
  out.push(...readOnlyStateArgs([...guardedStatePaths(plan.policy, keys, home, plan.project, plan.stateLimits), ...privates, ...installs], open));
  // The project's protected paths after that: a folder bound above to pin a protected state
  // file (a project that is the home) must not make them writable again.
  if (plan.project) out.push(...protectedArgs(plan.project, [...protectedProjectPaths(plan.policy), ...(plan.protectedBinds ?? [])], out, plan.protectedSeen));
  // The same in each folder granted writable (a sibling checkout has its own .git); never what holds
  // or lies in the project, which is held above.
  for (const g of plan.grantProtected ?? []) {
    const rels = g.rels.filter((rel) => !plan.project || (!within(join(g.root, rel), plan.project) && !within(plan.project, join(g.root, rel))));
    out.push(...protectedArgs(g.root, rels, out));
  }
  // A state file the CLI writes as it runs but that also configures it: a copy of its own
  // to write, at its path (its real file is read-only above). Where the project shows that
  // path through a link, a bind would go through it (and fail where it leads nowhere
  // inside): no copy then, and the CLI's writes to the file fail.
  for (const abs of privates) {
    if (plan.project && within(abs, plan.project) && linkBetween(plan.project, abs)) continue;
    const copy = plan.copies?.get(abs);
    out.push(copy ? '--bind' : '--ro-bind', copy ?? abs, abs);
  }
  if (plan.profileDir) {
    const profile = real(plan.profileDir);
    if (existsSync(profile) && bound.some((b) => within(profile, b))) out.push(...tmpfs(profile, plan.bounds?.tmp_bytes, f));
  }
  // Names only (a value in argv would show in the process table); bwrap drops them before exec.
  for (const name of plan.unset) if (!(name in plan.env)) out.push('--unsetenv', name);
  const usableHome = home && isAbsolute(home) && home !== '/' ? home : '';
  let inner = plan.bounds?.inner ?? [];
  let report: string[] = [];
  if (plan.report) {
    // An ordinary user's limit shell (`ulimit …; exec "$@"`): its limit set by the report shell itself.
    const limit = inner.length === 4 && inner[1] === '-c' && inner[2]?.endsWith(EXEC_TAIL) ? inner[2].slice(0, -EXEC_TAIL.length) : '';
    const made = madeWithin(out, [...(usableHome ? [usableHome] : []), '/tmp']);
    const cacheRoot = plan.caches?.root && plan.caches.binds.length ? `${literalPattern(plan.caches.root)}/*` : '';
    report = [inner[0] && limit ? inner[0] : '/bin/sh', '-c', `${limit}${REPORT}`, 'sh', REPORT_AT, usableHome, made.mounts, made.folders, made.links, cacheRoot];
    if (limit) inner = [];
  }
  // The report shell is the sandbox's first process itself (PID 1 of its namespace) instead of a child
  // of bwrap's own init: one process fewer per start. It does what that init did: it reaps what its
  // command leaves behind while it waits, it outlives a TERM (its trap; from outside the namespace, a
  // signal without a handler does not reach a PID 1 either), and when it exits the kernel ends
  // everything left in the sandbox, as bwrap's init did when it was ended with its parent. bwrap
  // itself (outside) then exits only once the namespace is empty: its first process is reaped after
  // the rest. --die-with-parent is set on it before the exec (bubblewrap 0.8: the same prctl).
  if (report.length) out.splice(out.indexOf('--unshare-all') + 1, 0, '--as-pid-1');
  out.push('--chdir', plan.cwd, '--', ...(plan.gate ? ['/bin/sh', '-c', GATE, 'sh', GATE_FD] : []), ...report, ...inner, ...(plan.proxy ? [plan.proxy.node, plan.proxy.bridge, plan.proxy.socket, '--'] : []), ...plan.argv);
  return out;
}

/** What one of shadowcode's own helper programs may see: node, the program's files, and exactly these files. */
export interface HelperPlan {
  readonly bwrap: string;
  readonly policy: SandboxPolicy;
  /** node and the program file it runs. */
  readonly argv: readonly string[];
  /** Files and folders the helper needs, shown read-only at `at` (default: the same path). */
  readonly reads: ReadonlyArray<{ readonly path: string; readonly at?: string }>;
  /** Files the helper needs to write, shown read-write at the same path. */
  readonly writes: readonly string[];
  readonly unset: readonly string[];
  /** The user's home: never bound as a whole, even when node is installed right under it. */
  readonly home: string | undefined;
  /** The size of its /tmp; the helper runs no other process, so no process bound. */
  readonly bounds?: Omit<SandboxBounds, 'inner' | 'home_bytes'>;
}

/**
 * The bwrap command line for a helper: no project, no home, no profile, no
 * network; the system folders, node's own install, and what the plan lists.
 */
export function helperArgv(plan: HelperPlan): string[] {
  const system = systemPart(plan.policy);
  const f = plan.bounds?.features;
  const out = [plan.bwrap, '--die-with-parent', '--new-session', '--unshare-all', ...lockdown(f), ...system.args, ...tmpfs('/tmp', plan.bounds?.tmp_bytes, f)];
  const node = installRoot(real(plan.argv[0] as string), plan.home);
  if (!system.bound.some((b) => within(node, b))) out.push('--ro-bind', node, node);
  for (const r of plan.reads) out.push('--ro-bind', r.path, r.at ?? r.path);
  for (const w of plan.writes) out.push('--bind', w, w);
  for (const name of plan.unset) out.push('--unsetenv', name);
  out.push('--chdir', '/', '--', ...plan.argv);
  return out;
}

/**
 * PATH with its absolute entries only. Our own lookup skips the others, but execvp (bwrap's,
 * Node's) does not: with `node_modules/.bin` in PATH an approved `git status` would run a
 * `git` the project holds. An empty entry means the current folder too. With nothing left,
 * no PATH: execvp then searches the system's default folders.
 */
export function absolutePath(env: Record<string, string>): Record<string, string> {
  if (env.PATH === undefined) return env;
  const kept = env.PATH.split(delimiter).filter((d) => isAbsolute(d));
  if (kept.join(delimiter) === env.PATH) return env;
  const { PATH: _dropped, ...rest } = env;
  return kept.length ? { ...rest, PATH: kept.join(delimiter) } : rest;
}

/**
 * The environment inside: a TMPDIR that exists there (the private /tmp is empty, so a folder below
 * the host's /tmp is not there either), a PATH of absolute folders, and the policy's set_env over
 * the rest (PYTHONPYCACHEPREFIX: bytecode in the private /tmp, not in the project, where a
 * planted .pyc would run outside at the next import).
 */
export function sandboxEnv(env: Record<string, string>, project: string | null, set: Readonly<Record<string, string>> = {}): Record<string, string> {
  const tmp = env.TMPDIR;
  const out = { ...absolutePath(env), ...set };
  if (tmp && tmp !== '/tmp' && !(project && within(tmp, project))) return { ...out, TMPDIR: '/tmp' };
  return out;
}
