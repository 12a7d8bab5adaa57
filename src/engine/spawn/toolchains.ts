/*
 * What a sandboxed process needs of the user's toolchains: found from the user's PATH and
 * environment, never guessed from the first word of a command, so that whatever the command
 * starts (`make` ─► `cargo`, `sh -c`, an npm script, a pyenv shim) finds the same programs
 * it finds outside the sandbox.
 *
 *   toolchainView(env, policy, project)
 *     each absolute PATH folder (never the home itself or a folder above it; a system folder
 *     is shown anyway) ─► its real path, the links met on the way there (recreated inside as
 *     the same links), and the links inside it that lead elsewhere (a pipx or mise shim)
 *     ─► a layout of policy/sandbox.json `toolchains` whose root holds one of them is in use;
 *        nothing claims it: the folder itself, or its install prefix (a bin beside a lib)
 *     ─► layouts whose root a set variable names ($PYENV_ROOT, $JAVA_HOME) are in use too;
 *        the interpreter a project's .venv was made from puts only a layout in use
 *     ─► read: what each layout in use shows (its `read` under the root, its `also`)
 *        links: symlinks to recreate in the private home
 *   cached per PATH, home and the variables the layouts name; checked again at each start
 *   against the inode and times of each PATH folder it can take anything from (not a system
 *   folder, not the home or above), so a new shim or version is seen, and of the folder of
 *   each path it looked for, found or not (a layout's root, its read and also), so a
 *   toolchain installed later is seen too, whatever PATH names.
 *
 * The hidden list, the profile and the project are applied by the caller (sandboxArgv):
 * nothing here is a grant, and a hidden path inside what is found is covered again there.
 */
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { realPath } from '../../util/confine.js';
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import { listDirNoFollow, readUserFile } from '../../util/safe-read.js';
import { usableHome, within } from './state-paths.js';

export interface ToolchainView {
  /** Folders and files shown read-only at their own path. */
  readonly read: readonly string[];
  /** Links to recreate inside: [where, what it points to], as the host has them. */
  readonly links: ReadonlyArray<readonly [string, string]>;
  /** The layouts in use, by name (sandbox show, tests). */
  readonly layouts: readonly string[];
}

/**
 * Where a policy place points: `$VAR[/rest]` (only when set to an absolute path), `~/x`, `/x`; null
 * when it cannot be said. A variable's `~` or `~/x` (a config that does not expand it: an MCP
 * client's env block, a unit file) is the home only where `tilde` says the tool reads it so itself
 * (npm, yarn, pip): the XDG rules, Go, uv, cargo and the version managers' scripts never do.
 */
export function placeOf(p: string, env: Record<string, string | undefined>, home: string | undefined, tilde = false): string | null {
  if (p.startsWith('$')) {
    const m = /^\$([A-Za-z_][A-Za-z0-9_]*)(\/.*)?$/.exec(p);
    const value = m ? env[m[1] as string] : undefined;
    if (!m || !value) return null;
    const base = tilde && (value === '~' || value.startsWith('~/')) ? (home ? join(home, value.slice(1)) : null) : value;
    if (!base || !isAbsolute(base)) return null;
    return m[2] ? join(base, m[2]) : resolve(base);
  }
  if (p.startsWith('~/')) return home ? join(home, p.slice(2)) : null;
  return isAbsolute(p) ? p : null;
}

const exists = (p: string) => {
  try {
    return statSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
};

function real(p: string): string | null {
  if (!lstatSync(p, { throwIfNoEntry: false })) return null;
  try {
    return realPath(p);
  } catch {
    return null;
  }
}

/** The variables a policy's places name: part of the cache key. */
const namedVars = new WeakMap<object, readonly string[]>();
function varsOf(policy: SandboxPolicy): readonly string[] {
  let v = namedVars.get(policy.toolchains);
  if (v) return v;
  const names = new Set<string>();
  for (const l of Object.values(policy.toolchains)) for (const p of [...l.root, ...(l.also ?? [])]) if (p.startsWith('$')) names.add(p.slice(1).split('/')[0] as string);
  namedVars.set(policy.toolchains, (v = [...names].sort()));
  return v;
}

interface Layout {
  readonly name: string;
  readonly root: string;
  readonly rootReal: string | null;
  /** Named by a set variable: in use whatever PATH says. */
  readonly named: boolean;
  readonly read: readonly string[];
  readonly also: readonly string[];
}

function layoutsOf(policy: SandboxPolicy, env: Record<string, string | undefined>, home: string | undefined, exists: (p: string) => boolean): Layout[] {
  const out: Layout[] = [];
  for (const [name, l] of Object.entries(policy.toolchains)) {
    let root: string | null = null;
    let named = false;
    for (const alt of l.root) {
      const at = placeOf(alt, env, home);
      if (!at || !exists(at)) continue;
      root = at;
      named = alt.startsWith('$');
      break;
    }
    if (!root) continue;
    const also = (l.also ?? []).map((a) => placeOf(a, env, home)).filter((a): a is string => a !== null);
    out.push({ name, root, rootReal: real(root), named, read: l.read ?? ['.'], also });
  }
  return out;
}

/**
 * The links met on the way to `path`, each as [link, what it says], in the order they are
 * met (a Nix profile: ~/.nix-profile ─► /nix/var/nix/profiles/per-user/u/profile ─► ...).
 */
export function linkChain(path: string, max = 40): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let todo = path.split(sep).filter(Boolean);
  let cur = '/';
  while (todo.length) {
    const next = join(cur, todo.shift() as string);
    const st = lstatSync(next, { throwIfNoEntry: false });
    if (!st) return out;
    if (!st.isSymbolicLink()) {
      cur = next;
      continue;
    }
    if (out.length >= max) return out;
    const target = readlinkSync(next);
    out.push([next, target]);
    // Go on from where the link leads, with what is left of the path after it.
    const to = resolve(dirname(next), target);
    todo = [...to.split(sep).filter(Boolean), ...todo];
    cur = '/';
  }
  return out;
}

/** A PATH folder's links that lead out of it, by its identity (cached: a shims folder holds hundreds of entries). */
const folderLinks = new Map<string, { key: string; targets: string[] }>();
function linksOut(dir: string, key: string, max: number): string[] {
  const had = folderLinks.get(dir);
  if (had && had.key === key) return had.targets;
  const targets = new Set<string>();
  const home = real(dir) ?? dir;
  // A listing opens nothing but the folder (unreadable: nothing to follow).
  let n = 0;
  for (const e of listDirNoFollow(dir) ?? []) {
    if (++n > max) break;
    if (e.kind !== 'link') continue;
    const t = real(join(dir, e.name));
    if (t && !within(t, home)) targets.add(t);
  }
  const list = [...targets];
  folderLinks.set(dir, { key, targets: list });
  return list;
}

const identity = (p: string): string => {
  try {
    // No exception for a missing one: most of the folders looked for are (~/.local/state), at every start.
    const st = statSync(p, { throwIfNoEntry: false });
    return st ? `${st.dev}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}` : 'none';
  } catch {
    return 'none';
  }
};

/** An install prefix: a bin folder's parent when it also holds lib, lib64, libexec or share. */
function prefixOf(dir: string, home: string | undefined, exists: (p: string) => boolean): string {
  if (basename(dir) !== 'bin') return dir;
  const up = dirname(dir);
  if (up === '/' || (home && within(home, up))) return dir;
  return ['lib', 'lib64', 'libexec', 'share'].some((d) => exists(join(up, d))) ? up : dir;
}

/** The interpreters a project's virtual environments were made from (pyvenv.cfg's home, where bin/python leads). */
function projectEnvs(project: string | null): string[] {
  if (!project) return [];
  const out: string[] = [];
  for (const name of ['.venv', 'venv']) {
    const dir = join(project, name);
    if (!lstatSync(dir, { throwIfNoEntry: false })) continue;
    const py = real(join(dir, 'bin', 'python'));
    if (py && !within(py, project)) out.push(py);
    try {
      const cfg = readUserFile(join(dir, 'pyvenv.cfg'), { cap: 4096, kind: 'virtual environment config', overflow: 'truncate' }).bytes.toString('utf8');
      const home = /^\s*home\s*=\s*(\/.*?)\s*$/m.exec(cfg)?.[1];
      if (home) out.push(home);
    } catch {
      /* no virtual environment there */
    }
  }
  return out;
}

interface Found {
  readonly key: string;
  readonly stamps: ReadonlyArray<readonly [string, string]>;
  readonly view: ToolchainView;
}
const cache = new Map<string, Found>();

/**
 * What the user's toolchains need, for a process started with `env` (its PATH, HOME and the
 * variables the layouts name) in `project` (whose .venv may name an interpreter).
 */
export function toolchainView(env: Record<string, string | undefined>, policy: SandboxPolicy, project: string | null, maxEntries: number): ToolchainView {
  const home = usableHome(env.HOME);
  const path = env.PATH ?? '';
  const envs = projectEnvs(project);
  const key = [path, home ?? '', project ?? '', ...varsOf(policy).map((v) => `${v}=${env[v] ?? ''}`), ...envs].join('\0');
  const had = cache.get(key);
  if (had && had.stamps.every(([p, id]) => identity(p) === id)) return had.view;

  const system = policy.system_read_only;
  // Each path the view asks after, there or not, stamps the folder it would be in: a path appears,
  // goes or is replaced only with a change to that folder (or to the folder itself appearing), so a
  // CARGO_HOME or a ~/.cargo/bin made after this look is seen at the next start. A few folders
  // (the home, a root or two, ~/.local/share), shared by most of what is looked for.
  const parents = new Set<string>();
  const look = (p: string): boolean => {
    parents.add(dirname(p));
    return exists(p);
  };
  const layouts = layoutsOf(policy, env, home, look);
  const inUse = new Set<Layout>(layouts.filter((l) => l.named));
  const shown = new Set<string>();
  const links = new Map<string, string>();
  const claim = (p: string): boolean => {
    // The innermost root that holds it: pipx's venvs lie in ~/.local too.
    let hit: Layout | undefined;
    for (const l of layouts) {
      const at = within(p, l.root) ? l.root : l.rootReal !== null && within(p, l.rootReal) ? l.rootReal : null;
      if (at && (!hit || at.length > hit.root.length)) hit = l;
    }
    if (hit) inUse.add(hit);
    return hit !== undefined;
  };
  const show = (p: string) => {
    if (home && within(home, p)) return; // the home itself, or above it: never whole
    shown.add(p);
  };
  const stamps: Array<readonly [string, string]> = [];
  const dirs = [...new Set(path.split(delimiter).filter((d) => d && isAbsolute(d)))];
  // A PATH folder inside the project (an activated .venv/bin, node_modules/.bin) is the
  // project's, already bound; what lies there (or where it leads) is for a task to choose,
  // so it never decides what else is shown: a .venv/bin swapped for a link to ~/.codex shows nothing.
  const projectReal = project ? real(project) : null;
  const inProject = (p: string) => !!project && (within(p, project) || (projectReal !== null && within(p, projectReal)));
  for (const d of dirs) {
    // Nothing is taken from a system folder (shown anyway) or the home or above (never whole),
    // whatever is there: not looked at, and not part of what says the view is still true.
    if ((home && within(home, d)) || system.some((s) => within(d, s))) continue;
    const id = identity(d);
    stamps.push([d, id]);
    if (id === 'none') continue;
    if (inProject(d)) continue;
    const r = real(d);
    if (!r || inProject(r)) continue;
    if (r !== d) for (const [at, to] of linkChain(d)) links.set(at, to);
    // The real folder, once: a linked one is reached through the links above.
    if (!system.some((s) => within(r, s)) && !claim(r)) show(prefixOf(r, home, look));
    if (r !== d) claim(d);
    // A node_modules/.bin (`npm run`, `npx`): its links lead into the packages beside it, which
    // need their own dependencies there too; the node_modules folder is shown once, read-only,
    // rather than one folder (and one mount) per package a link leads to.
    const modules = basename(r) === '.bin' && basename(dirname(r)) === 'node_modules' ? dirname(r) : null;
    for (const t of linksOut(d, id, maxEntries)) {
      if (system.some((s) => within(t, s)) || claim(t)) continue;
      show(modules && within(t, modules) ? modules : prefixOf(dirname(t), home, look));
    }
  }
  for (const p of envs) claim(p);
  for (const l of inUse) {
    for (const r of l.read) {
      const at = r === '.' ? l.root : join(l.root, r);
      if (look(at)) show(at);
    }
    for (const a of l.also) if (look(a)) show(a);
  }
  for (const d of parents) if (!stamps.some(([p]) => p === d)) stamps.push([d, identity(d)]);
  // A folder inside another one shown is shown with it.
  const read = [...shown].filter((p) => ![...shown].some((o) => o !== p && within(p, o))).sort();
  const view: ToolchainView = { read, links: [...links], layouts: [...inUse].map((l) => l.name).sort() };
  cache.set(key, { key, stamps, view });
  return view;
}
