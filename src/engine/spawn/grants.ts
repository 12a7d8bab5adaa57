/*
 * What the user added to the sandbox's defaults, checked and made ready for one
 * start. Two sources, both declared and reviewed, never guessed:
 *
 *   the profile's grants (sandbox allow: this project's and all projects')  ─┐
 *   a server definition's sandbox: {read, write, network} (part of its hash) ─┴► Boundary
 *     each path: still the real path it was granted as, still a folder or file,
 *     not the profile or in or above it, not in a hidden secret path unless
 *     granted with --secret (grantProblem: the same checks as at `sandbox allow`)
 *     ─► paths: bound by grantArgs in sandboxArgv's grant block
 *     ─► skipped: what is not applied at this start, and why (sandbox show says it)
 *     ─► hosts: reached only through the proxy (net-proxy.ts)
 *
 *   grantArgs ─► plain grants, shortest path first (a grant inside another one lands on it)
 *             ─► the project and writable state a grant would bury, bound again in their place
 *             ─► every hidden path inside a plain grant covered again (an empty read-only
 *                folder, an empty file): the hidden list wins over a grant that merely holds it
 *             ─► secret grants last, on top of those covers
 */
import { lstatSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import type { DeclaredSandbox } from '../../catalog/definition.js';
import { ScError } from '../../errors.js';
import { type HostPort, isIpLiteral, parseHostPort } from '../../policy/net.js';
import { type HostGrant, readSandboxGrants, scopeOf } from '../../store/sandbox-grants.js';
import { realOrSelf as real } from '../../util/confine.js';
import { expandHome, within } from './state-paths.js';

export type GrantSource = 'project' | 'all_projects' | 'definition';
export type { DeclaredSandbox };

export interface ActivePath {
  readonly path: string;
  readonly write: boolean;
  readonly secret: boolean;
  readonly scope: GrantSource;
}

export interface ActiveHost extends HostPort {
  /** The name may resolve to a loopback or private address (granted with --private). */
  readonly private: boolean;
  readonly scope: GrantSource;
}

export interface Boundary {
  readonly paths: readonly ActivePath[];
  readonly hosts: readonly ActiveHost[];
  /** Granted, but not applied at this start (gone, turned into a link, inside the project, no longer grantable). */
  readonly skipped: ReadonlyArray<{ readonly path: string; readonly scope: GrantSource; readonly why: string }>;
}

export const NO_GRANTS: Boundary = Object.freeze({ paths: [], hosts: [], skipped: [] });

/** The grant that names `target`: its host exactly (never a resolved address), and its port unless the grant names none. */
export function grantFor(hosts: readonly ActiveHost[], target: { host: string; port: number }): ActiveHost | undefined {
  return hosts.find((h) => h.host === target.host && (h.port === null || h.port === target.port));
}

/** The grant names the address itself (an address, localhost), or says the name may point inward (--private). */
export function mayPointInward(grant: ActiveHost, host: string): boolean {
  return isIpLiteral(host) || host === 'localhost' || grant.private;
}

/** The hidden list of policy/sandbox.json as absolute paths (those under ~/ only when the home is known). */
/** The last answer, by the policy's list and the home: names only, asked several times per start. */
let lastHidden: { list: readonly string[]; home: string | undefined; paths: readonly string[] } | null = null;
export function hiddenPaths(policy: SandboxPolicy, home: string | undefined): readonly string[] {
  if (lastHidden && lastHidden.list === policy.hidden && lastHidden.home === home) return lastHidden.paths;
  const paths = Object.freeze(policy.hidden.map((p) => expandHome(p, home)).filter((p): p is string => p !== null && isAbsolute(p)));
  lastHidden = { list: policy.hidden, home, paths };
  return paths;
}

export interface GrantContext {
  readonly profileDir: string | null;
  readonly hidden: readonly string[];
  /** The project a project grant is for (its protected paths cannot be granted), or null. */
  readonly project: string | null;
  readonly protectedPaths: readonly string[];
}

/**
 * Why `path` (a real, absolute path) cannot be granted, or null. The profile
 * never, also a path inside or above it (a grant above it would show it); a
 * protected path of the project never; a hidden secret path only with `secret`.
 */
export function grantProblem(path: string, secret: boolean, ctx: GrantContext): ScError | null {
  if (ctx.profileDir) {
    const profile = real(ctx.profileDir);
    if (within(path, profile) || within(profile, path)) {
      const where = path === profile ? 'is the profile' : within(path, profile) ? `lies inside the profile (${profile})` : `holds the profile (${profile})`;
      return new ScError('SC_SANDBOX_GRANT_REFUSED', `${path} ${where}, which holds state.db and the secret store: no sandboxed process may see it`, { path, profile });
    }
  }
  if (ctx.project) {
    for (const rel of ctx.protectedPaths) {
      const abs = join(ctx.project, rel);
      if (within(path, abs)) return new ScError('SC_SANDBOX_GRANT_REFUSED', `${path} is the project's protected path ${rel}, which stays read-only inside the sandbox`, { path, protected: rel });
    }
  }
  const hidden = ctx.hidden.find((h) => within(path, h) || within(path, real(h)));
  if (hidden && !secret) {
    return new ScError('SC_SANDBOX_GRANT_SECRET', `${path} ${path === hidden ? 'is one of the paths' : `lies in ${hidden}, one of the paths`} the sandbox hides as secret (policy/sandbox.json "hidden"); grant it with --secret if a sandboxed process must see it, and every approval will name it`, { path, hidden });
  }
  return null;
}

/** Whether the path is still exactly what was granted: there, and not a link (a swapped-in link could point anywhere). */
function stillThere(path: string): string | null {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return 'it no longer exists';
  if (st.isSymbolicLink() || real(path) !== path) return 'it is now reached through a link';
  if (!st.isDirectory() && !st.isFile()) return 'it is neither a folder nor a file';
  return null;
}

/**
 * The grants the profile holds for one project, checked again now: the policy or the
 * profile may have moved since a path was granted, and a folder may have been swapped.
 * Unreadable grants refuse the start (SC_SANDBOX_GRANTS_INVALID), as a broken policy would.
 */
export function profileBoundary(profileDir: string | null, project: string | null, policy: SandboxPolicy, home: string | undefined): Boundary {
  if (!profileDir || !project) return NO_GRANTS;
  const g = readSandboxGrants(profileDir);
  const ctx: GrantContext = { profileDir, hidden: hiddenPaths(policy, home), project, protectedPaths: policy.project_read_only };
  const paths: ActivePath[] = [];
  const hosts: ActiveHost[] = [];
  const skipped: Array<Boundary['skipped'][number]> = [];
  for (const [scope, s] of [['all_projects', scopeOf(g, null)], ['project', scopeOf(g, project)]] as const) {
    for (const p of s.paths) {
      const why = stillThere(p.path) ?? (within(p.path, project) ? 'it lies in the project, which is read-write already' : grantProblem(p.path, p.secret, ctx)?.message ?? null);
      if (why) skipped.push({ path: p.path, scope, why });
      else paths.push({ path: p.path, write: p.write, secret: p.secret, scope });
    }
    for (const h of s.hosts) hosts.push(hostOf(h, scope));
  }
  return { paths: merged(paths), hosts, skipped };
}

const hostOf = (h: HostGrant, scope: GrantSource): ActiveHost => ({ host: h.host, port: h.port, private: h.private, scope });

/** One entry per path: a project grant beats an all-projects one, write beats read-only. */
function merged(paths: ActivePath[]): ActivePath[] {
  const by = new Map<string, ActivePath>();
  for (const p of paths) {
    const had = by.get(p.path);
    by.set(p.path, had ? { ...p, write: had.write || p.write, secret: had.secret || p.secret, scope: p.scope === 'project' || had.scope === 'project' ? 'project' : p.scope } : p);
  }
  return [...by.values()];
}

/** The hosts a definition names, parsed; a malformed one is the definition's error. */
export function declaredHosts(network: DeclaredSandbox['network']): HostPort[] {
  if (!Array.isArray(network)) return [];
  return network.map((n) => {
    const h = parseHostPort(n);
    if (!h) throw new ScError('SC_DEF_INVALID', `sandbox.network: ${JSON.stringify(n)} is not HOST or HOST:PORT`);
    return h;
  });
}

/**
 * What a server's definition declares, for one start of it. A declared path that
 * does not exist is not shown (create it first); one the sandbox may never show
 * (the profile, a hidden secret path) refuses the start: the server would not do
 * what its definition says, and it must not see that path either.
 */
export function definitionBoundary(declared: DeclaredSandbox | undefined, profileDir: string | null, project: string | null, policy: SandboxPolicy, home: string | undefined): Boundary {
  if (!declared) return NO_GRANTS;
  const ctx: GrantContext = { profileDir, hidden: hiddenPaths(policy, home), project, protectedPaths: policy.project_read_only };
  const paths: ActivePath[] = [];
  const skipped: Array<Boundary['skipped'][number]> = [];
  for (const [list, write] of [[declared.read ?? [], false], [declared.write ?? [], true]] as const) {
    for (const p of list) {
      const abs = expandHome(p, home);
      if (!abs) {
        skipped.push({ path: p, scope: 'definition', why: 'no home is known to expand ~/ in' });
        continue;
      }
      const gone = lstatSync(abs, { throwIfNoEntry: false }) === undefined;
      if (gone) {
        skipped.push({ path: abs, scope: 'definition', why: 'it does not exist (create it first)' });
        continue;
      }
      const at = real(abs);
      const problem = grantProblem(at, false, ctx);
      if (problem) throw new ScError(problem.code, `the server's definition declares sandbox.${write ? 'write' : 'read'} ${p}, but ${problem.message}`, problem.detail);
      if (project && within(at, project)) skipped.push({ path: at, scope: 'definition', why: 'it lies in the project, which is read-write already' });
      else paths.push({ path: at, write, secret: false, scope: 'definition' });
    }
  }
  return { paths: merged(paths), hosts: declaredHosts(declared.network).map((h) => ({ ...h, private: false, scope: 'definition' as const })), skipped };
}

/** Two boundaries as one (a start that gets both). */
export function joined(a: Boundary, b: Boundary): Boundary {
  if (a === NO_GRANTS) return b;
  if (b === NO_GRANTS) return a;
  return { paths: merged([...a.paths, ...b.paths]), hosts: [...a.hosts, ...b.hosts], skipped: [...a.skipped, ...b.skipped] };
}

const depth = (p: string) => p.split('/').length;

/** What covers a hidden path: an empty read-only folder, or an empty file; a link or a socket gets nothing (it cannot be mounted over in its own place). */
export function cover(path: string): string[] {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st?.isDirectory()) return ['--tmpfs', path, '--remount-ro', path];
  if (st?.isFile()) return ['--ro-bind', '/dev/null', path];
  return [];
}

/**
 * Covers for every hidden path that lies inside one of `shown` (but is not one of them): an empty
 * read-only folder or an empty file, where it really lies (a link into a shown folder is covered
 * at its target). The hidden list wins over what merely holds a hidden path. `realOf`: the real
 * paths this start already looked up.
 */
export function coverHidden(hidden: readonly string[], shown: readonly string[], realOf: (p: string) => string = real): string[] {
  const args: string[] = [];
  const covered = new Set<string>();
  const coverAt = (at: string, h: string) => {
    if (covered.has(at) || !shown.some((p) => within(at, p) && at !== p)) return;
    covered.add(at);
    if (at === h && lstatSync(h, { throwIfNoEntry: false })?.isSymbolicLink()) return;
    args.push(...cover(at));
  };
  // The path, then its real path when that differs (no set made per path: about fifty per start).
  for (const h of hidden) {
    const r = realOf(h);
    coverAt(h, h);
    if (r !== h) coverAt(r, h);
  }
  return args;
}

/**
 * The grant block of the bwrap command line. `rebind`: what was bound read-write
 * before it (the project, a toolchain's state folders), bound again where a
 * grant holds it so that a read-only grant above cannot take its writes away.
 */
export function grantArgs(paths: readonly ActivePath[], hidden: readonly string[], rebind: readonly string[]): { args: string[]; bound: string[]; writable: string[] } {
  const args: string[] = [];
  const ordered = [...paths].sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path));
  const plain = ordered.filter((p) => !p.secret);
  for (const p of plain) args.push(p.write ? '--bind' : '--ro-bind', p.path, p.path);
  for (const w of rebind) if (plain.some((p) => within(w, p.path) && w !== p.path)) args.push('--bind', w, w);
  // The hidden list wins over a grant that only holds a hidden path: it is covered again, where it really lies.
  args.push(...coverHidden(hidden, plain.map((p) => p.path)));
  for (const p of ordered.filter((x) => x.secret)) args.push(p.write ? '--bind' : '--ro-bind', p.path, p.path);
  return { args, bound: ordered.map((p) => p.path), writable: ordered.filter((p) => p.write).map((p) => p.path) };
}
