/*
 * Sandbox grants as operations: what a user adds to the sandbox's defaults, and
 * the effective boundary a command in a project gets. Every surface calls these;
 * each is typed input ─► gate ─► typed result, audited with the caller's principal.
 *
 *   allow  {scope, path [write, secret] | host}  ─► gate 'cli:sandbox.allow' {path or host, scope}
 *            ─► checks (there? the profile? a protected path? a hidden secret without --secret?
 *               the scope's limit?) ─► sandbox-grants.json in the profile, atomically
 *            ─► 'sandbox_grant' audit row: how it ended (a refusal too, with its code)
 *   revoke {scope, path | host}                  ─► gate 'cli:sandbox.revoke' ─► the same
 *   show   {project, argv?}                      ─► gate 'cli:sandbox.show' ─► the boundary the spawn
 *            point would build for that command (the same code: boundaryOf, commandLine), read
 *            back from its bwrap command line: read-only, read-write, private, hidden, network
 *
 * A path is stored as its real path, checked when granted and again at every start
 * (engine/spawn/grants.ts), so a folder swapped for a link later is not followed.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { SandboxView } from '../../gen/types/sandbox-view.js';
import { childEnv } from '../engine/child-env.js';
import { boundaryOf, bridgeProgram, commandLine, previewBounds, projectCaches, proxied, sandboxPolicy, sandboxStatus, sandboxSupport } from '../engine/spawn/index.js';
import { builderFor, bwrapBuilder } from '../engine/spawn/builder.js';
import { REPORT_AT } from '../engine/spawn/sandbox.js';
import { syscallFilter } from '../engine/spawn/seccomp.js';
import { toolchainView } from '../engine/spawn/toolchains.js';
import { grantProblem, hiddenPaths } from '../engine/spawn/grants.js';
import { within } from '../engine/spawn/state-paths.js';
import { ScError } from '../errors.js';
import { enforce, type GateEnv } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import { type HostPort, hostPortText, parseHostPort } from '../policy/net.js';
import type { Db } from '../store/db.js';
import { getProject } from '../store/projects.js';
import { type GrantScope, type SandboxGrants, scopeOf, updateSandboxGrants } from '../store/sandbox-grants.js';
import type { OpsEnv } from './context.js';

export type { SandboxView };

/** Whose grant: one project (its canonical real path), or every project. */
export type Scope = { readonly project: string } | { readonly all_projects: true };

const scopeName = (s: Scope) => ('project' in s ? s.project : null);
const scopeText = (s: Scope) => ('project' in s ? `project ${s.project}` : 'all projects');

export type GrantTarget = { readonly path: string; readonly write?: boolean; readonly secret?: boolean } | { readonly host: string; readonly private?: boolean };

export interface GrantResult {
  readonly scope: 'project' | 'all_projects';
  readonly project: string | null;
  /** What is granted now (allow) or was (revoke). */
  readonly grant: { readonly path: string; readonly write: boolean; readonly secret: boolean } | { readonly host: string; readonly port: number | null; readonly private: boolean };
  /** false: it was already exactly so. */
  readonly changed: boolean;
  /** The grants of that scope afterwards. */
  readonly grants: GrantScope;
}

/** A path as the user typed it (~/ too), resolved against `cwd`: its real path if it exists, else as written. */
function pathOf(text: string, cwd: string, home: string | undefined): { abs: string; exists: boolean } {
  const expanded = text === '~' || text.startsWith('~/') ? (home ? join(home, text.slice(1)) : text) : text;
  const abs = resolve(cwd, expanded);
  try {
    return { abs: realpathSync(abs), exists: true };
  } catch {
    return { abs, exists: false };
  }
}

function hostOf(text: string): HostPort {
  const h = parseHostPort(text);
  if (!h) throw new ScError('SC_SANDBOX_GRANT_INVALID', `${JSON.stringify(text)} is not HOST or HOST:PORT (a name such as api.example.com, or an address; [::1]:8080 for IPv6 with a port)`);
  return h;
}

function withScope(g: SandboxGrants, s: Scope, next: GrantScope): SandboxGrants {
  if ('all_projects' in s) return { ...g, all_projects: next };
  const projects = { ...g.projects };
  if (next.paths.length === 0 && next.hosts.length === 0) delete projects[s.project];
  else projects[s.project] = next;
  return { ...g, projects };
}

/** Grants one path (read-only, or read-write) or one host to a project or to all projects. */
export async function allow(ops: OpsEnv, scope: Scope, target: GrantTarget, cwd: string): Promise<GrantResult> {
  const limits = ops.policy.limits.grants;
  const sp = sandboxPolicy(ops.policy);
  const project = scopeName(scope);
  if ('host' in target) {
    const h = hostOf(target.host);
    const inward = target.private === true;
    const req = ops.request('cli:sandbox.allow', { resource: { kind: 'sandbox_grant', id: hostPortText(h), host: h.host, ...(project ? { project } : {}) }, args: { host: hostPortText(h), private: inward, scope: project ? 'project' : 'all_projects' } });
    return enforce(ops.gate, req, (t) => {
      let changed = false;
      const g = updateSandboxGrants(t, ops.profileDir, ops.db(), { host: hostPortText(h), project }, (cur) => {
        const s = scopeOf(cur, project);
        const had = s.hosts.find((x) => x.host === h.host && x.port === h.port);
        if (had && had.private === inward) return { next: cur, changed: false };
        if (!had && s.hosts.length >= limits.sandbox_hosts) throw new ScError('SC_LIMIT_REACHED', `${scopeText(scope)} already grants ${s.hosts.length} hosts, the most allowed (grants.sandbox_hosts); revoke one first`);
        changed = true;
        const entry = { host: h.host, port: h.port, private: inward, granted_at: new Date().toISOString() };
        return { next: withScope(cur, scope, { ...s, hosts: had ? s.hosts.map((x) => (x === had ? entry : x)) : [...s.hosts, entry] }), changed };
      });
      return { scope: project ? 'project' : 'all_projects', project, grant: { host: h.host, port: h.port, private: inward }, changed, grants: scopeOf(g, project) };
    });
  }
  const { abs, exists } = pathOf(target.path, cwd, ops.env.HOME);
  const write = target.write === true;
  const req = ops.request('cli:sandbox.allow', { resource: { kind: 'sandbox_grant', id: abs, ...(project ? { project } : {}) }, args: { path: abs, write, secret: target.secret === true, scope: project ? 'project' : 'all_projects' } });
  return enforce(ops.gate, req, (t) => {
    let result: GrantResult['grant'] = { path: abs, write, secret: false };
    let changed = false;
    const g = updateSandboxGrants(t, ops.profileDir, ops.db(), { path: abs, write, project }, (cur) => {
      if (!exists || !isAbsolute(abs)) throw new ScError('SC_SANDBOX_GRANT_INVALID', `${target.path}${target.path === abs ? '' : ` (${abs})`} does not exist; create it first: a grant shows a folder or file that is there`, { path: abs });
      const st = lstatSync(abs);
      if (!st.isDirectory() && !st.isFile()) throw new ScError('SC_SANDBOX_GRANT_INVALID', `${abs} is neither a folder nor a file`, { path: abs });
      const hidden = hiddenPaths(sp, ops.env.HOME);
      const problem = grantProblem(abs, target.secret === true, { profileDir: ops.profileDir, hidden, project, protectedPaths: sp.project_read_only });
      if (problem) throw problem;
      if (project && within(abs, project)) throw new ScError('SC_SANDBOX_GRANT_INVALID', `${abs} lies in the project, which a sandboxed process already sees read-write (its protected paths read-only)`, { path: abs });
      // Marked secret only when it really is one of the hidden paths: that mark is what every approval names.
      const secret = grantProblem(abs, false, { profileDir: null, hidden, project: null, protectedPaths: [] }) !== null;
      result = { path: abs, write, secret };
      const s = scopeOf(cur, project);
      const had = s.paths.find((p) => p.path === abs);
      if (had && had.write === write && had.secret === secret) return { next: cur, changed: false };
      if (!had && s.paths.length >= limits.sandbox_paths) throw new ScError('SC_LIMIT_REACHED', `${scopeText(scope)} already grants ${s.paths.length} paths, the most allowed (grants.sandbox_paths); revoke one first`);
      changed = true;
      const entry = { path: abs, write, secret, granted_at: new Date().toISOString() };
      return { next: withScope(cur, scope, { ...s, paths: had ? s.paths.map((p) => (p.path === abs ? entry : p)) : [...s.paths, entry] }), changed };
    });
    return { scope: project ? 'project' : 'all_projects', project, grant: result, changed, grants: scopeOf(g, project) };
  });
}

/** Takes one grant back. A path is matched as granted (its real path, or as written when it is gone). */
export async function revoke(ops: OpsEnv, scope: Scope, target: { path: string } | { host: string }, cwd: string): Promise<GrantResult> {
  const project = scopeName(scope);
  const h = 'host' in target ? hostOf(target.host) : null;
  const abs = 'path' in target ? pathOf(target.path, cwd, ops.env.HOME).abs : null;
  const what = h ? { host: hostPortText(h) } : { path: abs as string };
  const req = ops.request('cli:sandbox.revoke', { resource: { kind: 'sandbox_grant', id: h ? hostPortText(h) : (abs as string), ...(h ? { host: h.host } : {}), ...(project ? { project } : {}) }, args: { ...what, scope: project ? 'project' : 'all_projects' } });
  return enforce(ops.gate, req, (t) => {
    let was: GrantResult['grant'] | undefined;
    const g = updateSandboxGrants(t, ops.profileDir, ops.db(), { ...what, project }, (cur) => {
      const s = scopeOf(cur, project);
      if (h) {
        const hit = s.hosts.find((x) => x.host === h.host && x.port === h.port);
        if (!hit) throw new ScError('SC_SANDBOX_GRANT_NOT_FOUND', `${scopeText(scope)} grants no host ${hostPortText(h)}${s.hosts.length ? ` (it grants ${s.hosts.map((x) => hostPortText(x)).join(', ')})` : ''}`, { host: hostPortText(h) });
        was = { host: hit.host, port: hit.port, private: hit.private };
        return { next: withScope(cur, scope, { ...s, hosts: s.hosts.filter((x) => x !== hit) }), changed: true };
      }
      const hit = s.paths.find((p) => p.path === abs);
      if (!hit) throw new ScError('SC_SANDBOX_GRANT_NOT_FOUND', `${scopeText(scope)} grants no path ${abs}${s.paths.length ? ` (it grants ${s.paths.map((p) => p.path).join(', ')})` : ''}`, { path: abs });
      was = { path: hit.path, write: hit.write, secret: hit.secret };
      return { next: withScope(cur, scope, { ...s, paths: s.paths.filter((p) => p !== hit) }), changed: true };
    });
    return { scope: project ? 'project' : 'all_projects', project, grant: was as GrantResult['grant'], changed: true, grants: scopeOf(g, project) };
  });
}

/**
 * Reads a command line back as what the process sees (the builder's own reading of it): each
 * destination takes the mode of the last mount made on it (later mounts sit on top).
 */
function readBack(argv: readonly string[]): { ro: string[]; rw: string[]; private: string[]; covered: string[]; links: string[] } {
  const mode = new Map<string, string>();
  const links: string[] = [];
  for (const m of (builderFor() ?? bwrapBuilder).mounts(argv)) {
    if (m.mode === 'link') {
      links.push(m.at);
      continue;
    }
    mode.delete(m.at);
    mode.set(m.at, m.mode);
  }
  const of = (m: string) => [...mode].filter(([, v]) => v === m).map(([k]) => k);
  return { ro: of('ro'), rw: of('rw'), private: of('private'), covered: of('covered'), links };
}

/** The effective boundary of a command (or of any command) in the project, as the spawn point would build it now. */
export async function show(ops: OpsEnv, project: string, argv: readonly string[] | null): Promise<SandboxView> {
  const req = ops.request('cli:sandbox.show', { resource: { kind: 'sandbox', id: project, project }, args: argv ? { argv: [...argv] } : {} });
  return enforce(ops.gate, req, () => {
    const status = sandboxStatus(ops.policy);
    const sp = sandboxPolicy(ops.policy);
    const env = childEnv(ops.policy.environment, ops.env);
    const network = getProject(ops.db(), project).network;
    const spawn = { kind: 'command' as const, argv: argv ? [...argv] : [], cwd: project, env, confine: { project, network }, trustedArgv: false, policy: ops.policy };
    const grants = boundaryOf(spawn, ops.profileDir);
    const hosts = proxied(spawn, grants);
    const placeholder = { dir: join(env.TMPDIR ?? '/tmp', 'shadowcode-net-XXXXXX'), socket: join(env.TMPDIR ?? '/tmp', 'shadowcode-net-XXXXXX', 'proxy.sock') };
    const caches = projectCaches(spawn, ops.profileDir, true, undefined, undefined, grants);
    const built = commandLine(spawn, sandboxSupport().bwrap ?? 'bwrap', ops.profileDir, { grants, proxy: hosts ? placeholder : null, caches, reportFile: join(env.TMPDIR ?? '/tmp', 'shadowcode-out-XXXXXX') }, previewBounds(ops.policy));
    // The syscall filter is added at the start, on a descriptor of its own: the first descriptor after stdin, stdout and stderr.
    const line = syscallFilter(sp).kind === 'bpf' ? [built[0] as string, '--seccomp', '3', ...built.slice(1)] : built;
    const tools = toolchainView(env, sp, project, ops.policy.limits.sandbox.path_entries);
    const seen = readBack(line);
    const internal = (p: string) => within(p, placeholder.dir) || p === bridgeProgram() || p === REPORT_AT;
    // A protected path that does not exist yet gets a placeholder when a process starts: it is read-only then too.
    const protectedPaths = sp.project_read_only.map((rel) => join(project, rel));
    const profile = (() => {
      try {
        return realpathSync(ops.profileDir);
      } catch {
        return ops.profileDir;
      }
    })();
    const hidden = [profile, ...hiddenPaths(sp, env.HOME).filter((h) => lstatSync(h, { throwIfNoEntry: false }) !== undefined)];
    return {
      project,
      sandbox: { level: status.level, label: status.label, detail: status.detail },
      command: argv ? [...argv] : null,
      read_only: [...new Set([...seen.ro.filter((p) => !internal(p)), ...protectedPaths])].sort(),
      // A private cache is a link at its usual path into the caches' folder (bound read-write once), a beside cache a folder
      // in it: each listed at its own path, as when each was a mount.
      read_write: [...new Set([...seen.rw, ...caches.binds.filter((c) => seen.links.includes(c.at) || (caches.root && within(c.at, caches.root) && seen.rw.includes(caches.root))).map((c) => c.at)])].filter((p) => !internal(p) && !protectedPaths.includes(p)).sort(),
      private: seen.private,
      hidden: [...new Set([...hidden, ...seen.covered])].filter((h) => !grants.paths.some((g) => g.secret && within(g.path, h))).sort(),
      toolchains: [...tools.layouts],
      // Where no link can be made, a cache is bound on its own from its alone folder: that folder is the one it keeps.
      caches: caches.binds.map((c) => ({ name: c.name, mode: c.mode, user: c.user, private: c.at !== c.private && seen.rw.includes(c.at) && caches.alone ? caches.alone(c) : c.private, at: c.at, from: c.from })),
      caches_not_kept: (caches.notKept ?? []).map((c) => ({ ...c })),
      caches_refused: caches.refused ? { ...caches.refused } : null,
      network: { mode: network ? 'all' : hosts ? 'hosts' : 'none', hosts: network ? [] : grants.hosts.map((h) => hostPortText(h)) },
      grants: {
        paths: grants.paths.map((p) => ({ path: p.path, write: p.write, secret: p.secret, scope: p.scope })),
        hosts: grants.hosts.map((h) => ({ host: h.host, port: h.port, private: h.private, scope: h.scope })),
        skipped: grants.skipped.map((s) => ({ ...s })),
      },
      bwrap: argv && status.level === 'bwrap' ? line : null,
    };
  });
}
