/*
 * The protected paths of one project as they lie on disk now: what no pattern can say
 * in advance. The write tools check a path against it, the sandbox binds it read-only,
 * and the spawn point compares it before and after a process to see what that made.
 *
 *   never_write literals (.git, .shadowcode, .shadow/mcp) ─► lstat each
 *   never_write '**' names (.git, .gitmodules, .claude, .mcp.json, …) ─► breadth-first
 *       scan below the top (limits.protection.scan_entries, scan_depth; never into a
 *       link, a match or a scan.skip folder such as node_modules); a folder unchanged
 *       since the last scan of the project (same inode and times) is not read again
 *   each folder that is a git directory under another name (HEAD, objects/, refs/: a bare
 *       repository, `lib.git`; or HEAD and a commondir file, with the folder it names) ─► protected like .git (git uses it as a repository when
 *       run in it or pointed at it, and runs what its config and hooks say)
 *   each match that is a link ─► its real target inside the project, same rule
 *   each repository found (.git folder or .git file ─► gitdir ─► commondir; a bare one;
 *       the repository that holds the project, when it lies inside a bigger one) ─► its
 *       config (and the files it includes) ─► git_config keys: the hooks folder,
 *       included files, the programs of command settings, inside the project
 *   ─► ProtectedLayout { entries [{rel, rule, via, kind, hold}], truncated }
 *
 * Everything is a real, project-relative path ('/'-separated). A link is never
 * followed by the scan itself, only resolved once to see where it leads.
 */
import { lstatSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { dirStamp, listDirNoFollow, readUserFile } from '../util/safe-read.js';
import { insideProject, realPath } from '../util/confine.js';
import { firstWord, matchesKey, parseGitConfig } from './git-config.js';
import type { Policy } from './load.js';

export type EntryKind = 'dir' | 'file' | 'link' | 'other' | 'missing';

export interface ProtectedEntry {
  /** Project-relative real path, '/'-separated. */
  readonly rel: string;
  /** The rule that protects it (a never_write rule, or git_config's). */
  readonly rule: string;
  readonly description: string;
  /** Why this path, when no pattern names it: "the link .claude leads here", "core.hooksPath in .git/config". */
  readonly via: string | null;
  readonly kind: EntryKind;
  /** A folder to hold with a placeholder while sandboxes run, when it is missing (a hooks folder git config names). */
  readonly hold: boolean;
}

export interface ProtectedLayout {
  readonly entries: readonly ProtectedEntry[];
  /** The scan stopped at a limit: deeper or later entries were not looked at. */
  readonly truncated: boolean;
}

const slashed = (p: string) => (sep === '/' ? p : p.split(sep).join('/'));

/**
 * One protectedLayout call's lstat answers: it makes nothing, so each holds until it returns (a
 * repository's .git was looked at three times: the literal, the repository around, its config).
 */
let scanLook: Map<string, Stats | undefined> | null = null;
function look(abs: string): Stats | undefined {
  if (!scanLook) return lstatSync(abs, { throwIfNoEntry: false });
  if (scanLook.has(abs)) return scanLook.get(abs);
  const st = lstatSync(abs, { throwIfNoEntry: false });
  scanLook.set(abs, st);
  return st;
}

function kindOf(abs: string): EntryKind {
  const st = look(abs);
  if (!st) return 'missing';
  return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
}

interface Compiled {
  /** Literal project paths (no wildcard), lower case ─► rule. */
  readonly literals: ReadonlyArray<{ rel: string; rule: string; description: string }>;
  /** Names a '**' pattern protects at any depth, lower case ─► rule. */
  readonly names: ReadonlyMap<string, { rule: string; description: string }>;
  readonly skip: ReadonlySet<string>;
  /** The last few roots' folder listings (a project and the folders granted writable beside it), to read again only the folders that changed since. */
  readonly cache: Map<string, Map<string, Listing>>;
}

/** What the scan needs of one folder, and the stamp that says it is still so. */
interface Listing {
  readonly ino: number;
  readonly ctimeMs: number;
  readonly mtimeMs: number;
  readonly count: number;
  readonly hits: ReadonlyArray<{ name: string; kind: EntryKind }>;
  readonly subdirs: readonly string[];
  /** It holds what makes a folder a git directory to git (HEAD, objects/, refs/), whatever its name. */
  readonly gitDir: boolean;
}

/** What git itself looks for to take a folder as a repository's git directory (setup.c, is_git_directory). */
const GIT_DIR_MARKS: ReadonlyArray<readonly [string, EntryKind]> = [
  ['HEAD', 'file'],
  ['objects', 'dir'],
  ['refs', 'dir'],
];

const CACHED_ROOTS = 8;

function cacheFor(c: Compiled, project: string): Map<string, Listing> | null {
  return c.cache.get(project) ?? null;
}

function remember(c: Compiled, project: string, dirs: Map<string, Listing>): void {
  c.cache.delete(project);
  c.cache.set(project, dirs);
  if (c.cache.size > CACHED_ROOTS) c.cache.delete(c.cache.keys().next().value as string);
}

/**
 * One folder's protected names and subfolders to enter. A folder whose inode, change time
 * and modification time are those of the last listing has the same entries: adding,
 * removing or renaming one changes both times, and the change time cannot be set back.
 * A listing is reused only if its folder last changed more than `racyMs` before it was
 * read: file times are coarse, and a change in the same tick as the read would not show.
 */
function listing(c: Compiled, project: string, dir: string, cache: Map<string, Listing> | null, racyMs: number): Listing | null {
  const abs = dir ? join(project, dir) : project;
  const st = dirStamp(abs);
  if (!st) return null;
  const old = cache?.get(dir);
  if (old && old.ino === st.ino && old.ctimeMs === st.ctimeMs && old.mtimeMs === st.mtimeMs) return old;
  const readAt = Date.now();
  const list = listDirNoFollow(abs);
  if (!list) return null;
  const hits: Array<{ name: string; kind: EntryKind }> = [];
  const subdirs: string[] = [];
  let marks = 0;
  let head = false;
  let common = false;
  for (const d of list) {
    // HEAD may be a link (old git): anything but a folder counts.
    if (GIT_DIR_MARKS.some(([n, k]) => d.name === n && (k === 'dir' ? d.kind === 'dir' : d.kind !== 'dir'))) marks++;
    if (d.name === 'HEAD' && d.kind !== 'dir') head = true;
    if (d.name === 'commondir' && d.kind !== 'dir') common = true;
    const lower = d.name.toLowerCase();
    if (c.names.has(lower)) hits.push({ name: d.name, kind: d.kind });
    else if (d.kind === 'dir' && !c.skip.has(lower)) subdirs.push(d.name);
  }
  // Changed too recently to trust the stamp: used now, listed again next time.
  const racy = readAt - Math.max(st.ctimeMs, st.mtimeMs) < racyMs;
  return { ino: racy ? -1 : st.ino, ctimeMs: st.ctimeMs, mtimeMs: st.mtimeMs, count: list.length, hits, subdirs, gitDir: marks === GIT_DIR_MARKS.length || (head && common) };
}

const compiledFor = new WeakMap<object, Compiled>();

function compile(policy: Policy): Compiled {
  const p = policy.protected_paths;
  let c = compiledFor.get(p);
  if (c) return c;
  const literals: Array<{ rel: string; rule: string; description: string }> = [];
  const names = new Map<string, { rule: string; description: string }>();
  for (const r of p.never_write) {
    for (const path of r.paths) {
      const m = /^\*\*\/([^/*]+)$/.exec(path);
      if (m) {
        if (!names.has((m[1] as string).toLowerCase())) names.set((m[1] as string).toLowerCase(), { rule: r.id, description: r.description });
      } else if (!path.includes('*')) literals.push({ rel: path, rule: r.id, description: r.description });
    }
  }
  c = { literals, names, skip: new Set(p.scan.skip.map((s) => s.toLowerCase())), cache: new Map() };
  compiledFor.set(p, c);
  return c;
}

/**
 * The never_write paths that exist in the project now, what protected links lead to,
 * and what its git configuration names. `scan: false` looks only at the top of the
 * project (the literals and the names there), for a caller that cannot afford more.
 */
export function protectedLayout(policy: Policy, project: string, opts: { scan?: boolean; home?: string } = {}): ProtectedLayout {
  const outer = scanLook;
  scanLook = new Map();
  try {
    return layoutNow(policy, project, opts);
  } finally {
    scanLook = outer;
  }
}

function layoutNow(policy: Policy, project: string, opts: { scan?: boolean; home?: string }): ProtectedLayout {
  const c = compile(policy);
  const L = policy.limits.protection;
  const entries = new Map<string, ProtectedEntry>();
  const add = (e: ProtectedEntry) => {
    const key = e.rel.toLowerCase();
    if (e.rel !== '' && !entries.has(key)) entries.set(key, e);
  };
  for (const l of c.literals) {
    const kind = kindOf(join(project, l.rel));
    if (kind !== 'missing') add({ rel: l.rel, rule: l.rule, description: l.description, via: null, kind, hold: false });
  }
  // Breadth first, so a bound cuts off the deepest folders, never the shallow ones a host or git would use first.
  let truncated = false;
  let budget = L.scan_entries;
  let level: string[] = [''];
  const seen = cacheFor(c, project);
  const fresh = new Map<string, Listing>();
  // The rule that protects `.git` protects a git directory by any other name; without it, none.
  const gitRule = c.names.get('.git');
  const bare: string[] = [];
  for (let depth = 0; level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      const list = listing(c, project, dir, seen, L.scan_cache_racy_ms);
      if (!list) continue;
      fresh.set(dir, list);
      if (list.gitDir && dir !== '' && gitRule) {
        add({ rel: dir, rule: gitRule.rule, description: gitRule.description, via: 'a git directory (HEAD, objects, refs) by another name', kind: 'dir', hold: false });
        bare.push(dir);
        // git finds objects, refs and config through commondir (a linked worktree's git directory): that folder is the repository too.
        const shared = commonDirOf(project, dir, L.git_config_bytes);
        if (shared) {
          add({ rel: shared, rule: gitRule.rule, description: gitRule.description, via: `the common git directory ${dir}/commondir names`, kind: kindOf(join(project, shared)), hold: false });
          bare.push(shared);
        }
        continue; // what lies inside is protected with it
      }
      // The top is always read whole: it is where hosts and git look first.
      if (depth > 0) {
        if (budget <= 0) {
          truncated = true;
          break;
        }
        budget -= list.count;
      }
      for (const h of list.hits) {
        const hit = c.names.get(h.name.toLowerCase()) as { rule: string; description: string };
        add({ rel: dir ? `${dir}/${h.name}` : h.name, rule: hit.rule, description: hit.description, via: null, kind: h.kind, hold: false });
      }
      if (opts.scan !== false) for (const s of list.subdirs) next.push(dir ? `${dir}/${s}` : s);
    }
    if (truncated) break;
    if (next.length > 0 && depth + 1 > L.scan_depth) {
      truncated = true;
      break;
    }
    level = next;
  }
  // Only what was read this time is kept: a folder gone or out of reach drops out.
  if (opts.scan !== false) remember(c, project, fresh);
  // A protected path that is a link: what it leads to inside the project is protected by the same rule.
  for (const e of [...entries.values()]) {
    if (e.kind !== 'link') continue;
    let real: string;
    try {
      real = realPath(join(project, e.rel));
    } catch {
      continue; // dangling: nothing there to protect (yet)
    }
    if (!insideProject(project, real) || real === project) continue;
    add({ rel: slashed(relative(project, real)), rule: e.rule, description: e.description, via: `the link ${e.rel} leads here`, kind: kindOf(real), hold: false });
  }
  for (const g of gitNamed(policy, project, [...entries.values()], bare, enclosingGit(project), opts.home)) add(g);
  // What lies inside another protected folder is protected with it already.
  const all = [...entries.values()];
  const dirs = all.filter((e) => e.kind === 'dir').map((e) => e.rel.toLowerCase());
  const kept = all.filter((e) => !dirs.some((d) => e.rel.toLowerCase().startsWith(`${d}/`)));
  return { entries: kept, truncated };
}

/**
 * A git file's text, bounded; null when it is not there or cannot be read. Looked at first: most of
 * them are missing (config.worktree, commondir, a placeholder's config), and each miss read through
 * readUserFile made two errors, stack traces included, at every sandboxed start.
 */
function gitText(file: string, cap: number, kind: string): string | null {
  try {
    if (!look(file)) return null;
    return readUserFile(file, { cap, kind, overflow: 'truncate' }).bytes.toString('utf8');
  } catch {
    return null;
  }
}

/** The project-relative folder a git directory's commondir file names, when it lies inside the project. */
function commonDirOf(project: string, dir: string, cap: number): string | null {
  try {
    const text = gitText(join(project, dir, 'commondir'), cap, 'git commondir')?.trim();
    if (!text) return null;
    const abs = isAbsolute(text) ? text : join(project, dir, text);
    let real: string;
    try {
      real = realPath(abs);
    } catch {
      real = abs; // not there yet: protect the name, so it cannot be made later
    }
    return insideProject(project, real) && real !== project ? slashed(relative(project, real)) : null;
  } catch {
    return null;
  }
}

/**
 * The .git of the repository the project lies in when it is a folder of a bigger one: the
 * first .git above it, as git's own discovery finds it from inside the project. git run in
 * the project reads that repository's config, so what it names inside the project counts.
 */
export function enclosingGit(project: string): string | null {
  if (look(join(project, '.git'))) return null;
  for (let dir = dirname(project); ; dir = dirname(dir)) {
    const dotGit = join(dir, '.git');
    if (look(dotGit)) return dotGit;
    if (dirname(dir) === dir) return null;
  }
}

/** The config files of the repository whose .git entry is `dotGit` (a folder, or a file naming the real one). */
function configFiles(dotGit: string, cap: number): string[] {
  const st = look(dotGit);
  if (!st) return [];
  let gitdir = dotGit;
  if (st.isFile()) {
    const text = gitText(dotGit, cap, 'git file');
    if (text === null) return [];
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
    if (!m) return [];
    gitdir = isAbsolute(m[1] as string) ? (m[1] as string) : join(dirname(dotGit), m[1] as string);
  } else if (!st.isDirectory()) return [];
  const out = [join(gitdir, 'config.worktree')];
  let common = gitdir;
  // None: an ordinary repository, its config is beside.
  const rel = gitText(join(gitdir, 'commondir'), cap, 'git commondir')?.trim();
  if (rel) common = isAbsolute(rel) ? rel : join(gitdir, rel);
  out.push(join(common, 'config'));
  return out;
}

/**
 * What the git configuration of the project's repositories names inside the project.
 * Each repository's working tree is the folder holding its .git; a relative hooks
 * folder or program is taken from there, an included file from its config's folder.
 */
function gitNamed(policy: Policy, project: string, found: readonly ProtectedEntry[], bare: readonly string[], outer: string | null, home: string | undefined): ProtectedEntry[] {
  const g = policy.protected_paths.git_config;
  const L = policy.limits.protection;
  const out: ProtectedEntry[] = [];
  const repos = found.filter((e) => e.rel.split('/').pop()?.toLowerCase() === '.git' && e.kind !== 'link' && e.via === null).map((e) => join(project, e.rel));
  if (outer) repos.push(outer);
  const queue: Array<{ file: string; top: string }> = repos.flatMap((dotGit) => configFiles(dotGit, L.git_config_bytes).map((file) => ({ file, top: dirname(dotGit) })));
  // A bare repository has no working tree: git takes a relative hooks folder from the git directory itself.
  for (const b of bare) for (const file of configFiles(join(project, b), L.git_config_bytes)) queue.push({ file, top: join(project, b) });
  const seen = new Set<string>();
  const expand = (v: string, base: string): string | null => {
    if (v.startsWith('~/')) return home ? join(home, v.slice(2)) : null;
    return isAbsolute(v) ? v : join(base, v);
  };
  const named = (abs: string | null, via: string, hold: boolean) => {
    if (!abs) return;
    let real = abs;
    try {
      real = realPath(abs);
    } catch {
      /* missing: judged as written */
    }
    if (!insideProject(project, real) || real === project) return;
    const kind = kindOf(real);
    out.push({ rel: slashed(relative(project, real)), rule: g.id, description: g.description, via, kind, hold: hold && kind === 'missing' });
  };
  while (queue.length > 0 && seen.size < L.git_config_files) {
    const { file, top } = queue.shift() as { file: string; top: string };
    if (seen.has(file)) continue;
    seen.add(file);
    const text = gitText(file, L.git_config_bytes, 'git config');
    if (text === null) continue;
    const where = insideProject(project, file) ? slashed(relative(project, file)) : file;
    for (const s of parseGitConfig(text)) {
      const k = g.keys.find((x) => matchesKey(s, x.key));
      if (!k) continue;
      const via = `${k.key} in ${where}`;
      if (k.value === 'hooks_dir') named(expand(s.value, top), via, true);
      else if (k.value === 'include') {
        const abs = expand(s.value, dirname(file));
        named(abs, via, false);
        if (abs) queue.push({ file: abs, top });
      } else {
        const word = firstWord(s.value.replace(/^!/, ''));
        if (word && word.includes('/')) named(expand(word, top), via, false);
      }
    }
  }
  return out;
}

/** Whether `rel` (project-relative, '/'-separated) is an entry or lies below one; the entry, ignoring case. */
export function coveredBy(layout: ProtectedLayout, rel: string): ProtectedEntry | null {
  const r = rel.toLowerCase();
  for (const e of layout.entries) {
    const x = e.rel.toLowerCase();
    if (r === x || r.startsWith(`${x}/`)) return e;
  }
  return null;
}

/**
 * What an approved command may do with a project path, as the sandbox will build it now:
 * hidden (the profile), read_only (a held path, or a protected one the spawn point finds),
 * created_later (a protected path no sandbox can hold yet: a command could make it, and it
 * is named after the command ends), or writable.
 */
export type SandboxAccess = 'hidden' | 'read_only' | 'created_later' | 'writable';

export function sandboxAccess(policy: Policy, project: string, rel: string, verdict: { list: string | null; effect: string }): SandboxAccess {
  if (verdict.list === 'profile') return 'hidden';
  const r = rel.toLowerCase();
  const under = (x: string) => r === x.toLowerCase() || r.startsWith(`${x.toLowerCase()}/`);
  if (policy.sandbox.project_read_only.some(under)) return 'read_only';
  if (coveredBy(protectedLayout(policy, project), rel)) return 'read_only';
  return verdict.list === 'never_write' && verdict.effect === 'refuse' ? 'created_later' : 'writable';
}
