/*
 * The parts of a toolchain's own state that decide what it runs outside any sandbox the
 * next time the user starts it: the paths policy tool_state_read_only lists (Claude
 * Code's settings.json and hooks, Codex's config.toml), the programs those files name
 * (a hook's script, a status line command, a notify program), and the private files of
 * tool_state_private (Claude Code's ~/.claude.json).
 *
 *   listed paths (~/ expanded) ─► each listed file's text ─► the absolute, ~/ or $HOME/
 *   paths it names (limits.runners.state_named_paths at most; files in the home or the project only)
 *   ─► guardedStatePaths: all of them, which the runner compares before and after a task
 *   readOnlyStateArgs(paths, open areas) ─► the real file of each path, at every place
 *   the sandbox shows it writable (a state folder, the project) ─► the folders above it
 *   there pinned (--bind onto themselves: not renamable) ─► --ro-bind on it, on top
 *
 * A link itself is never bound (the folder holding it is writable, so it could be
 * replaced, and inside the sandbox it may lead nowhere); what it leads to is, where that
 * is visible and writable inside.
 */
import { statSync } from 'node:fs';
import { realPath } from '../../util/confine.js';
import { basename, dirname, isAbsolute, join, normalize, relative, sep } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import { listDirNoFollow, readUserFile } from '../../util/safe-read.js';

/** How much of a protected file is searched for the paths it names, and how many are kept (policy limits.runners). */
export interface NamedLimits {
  readonly state_named_file_bytes: number;
  readonly state_named_paths: number;
}

/** `child` is `parent` or below it. No string is made: a start asks this some thousand times. */
export const within = (child: string, parent: string): boolean => {
  if (child === parent) return true;
  if (parent.endsWith(sep)) return child.startsWith(parent);
  return child.length > parent.length && child[parent.length] === sep && child.startsWith(parent);
};

export function expandHome(p: string, home: string | undefined): string | null {
  if (!p.startsWith('~/')) return p;
  return home ? join(home, p.slice(2)) : null;
}

function realQuiet(p: string): string | null {
  try {
    return realPath(p);
  } catch {
    return null;
  }
}

/** A home that can anchor ~/ paths: absolute and not the root (else none). */
export function usableHome(home: string | undefined): string | undefined {
  return home && isAbsolute(home) && home !== '/' ? home : undefined;
}

/**
 * What cannot be there now because its first folder below the home is not: one listing of the
 * home answers for the ~50 hidden paths and the caches' usual paths of a start, nearly all of
 * them absent, instead of a lookup each. Anything else (outside the home, the home unreadable)
 * is not known to be absent, and is looked up as before.
 */
export function absentInHome(anyHome: string | undefined): HomeLook {
  const home = usableHome(anyHome);
  const listed = home ? listDirNoFollow(home) : null;
  if (!home || !listed) return Object.assign(() => false, { made: () => {} });
  const present = new Set(listed.map((e) => e.name));
  // A plain path below a plain home: its first name is a slice (relative() resolves both and makes
  // several strings, ~50 times per start); anything else is asked of relative() as before.
  const fast = sep === '/' && normalize(home) === home && !home.endsWith(sep);
  const first = (p: string): string | null => {
    if (fast && p.length > home.length + 1 && p[home.length] === sep && p.startsWith(home) && plain(p)) {
      const end = p.indexOf(sep, home.length + 1);
      const name = end < 0 ? p.slice(home.length + 1) : p.slice(home.length + 1, end);
      return name.startsWith('..') ? null : name;
    }
    const rel = relative(home, p);
    if (!rel || rel.startsWith('..') || isAbsolute(rel)) return null;
    return rel.split(sep)[0] as string;
  };
  return Object.assign(
    (p: string) => {
      const name = first(p);
      return name !== null && !present.has(name);
    },
    {
      made: (dir: string) => {
        const name = first(dir);
        if (name !== null) present.add(name);
      },
    },
  );
}

/** An absolute path that normalize() leaves as it is: no empty, `.` or `..` part, no slash at the end. */
const plain = (p: string) => p[0] === '/' && !p.includes('//') && !p.includes('/./') && !p.includes('/../') && !p.endsWith('/.') && !p.endsWith('/..') && !p.endsWith('/');

/**
 * absentInHome's answer, kept through one start (the caches, then the command line: one listing,
 * not two). `made(dir)`: a folder the start itself made since, so that the answer stays what a
 * new listing would say.
 */
export type HomeLook = ((p: string) => boolean) & { readonly made: (dir: string) => void };

function listed(table: Record<string, string[]>, keys: readonly string[], anyHome: string | undefined): string[] {
  const home = usableHome(anyHome);
  const paths = keys.flatMap((k) => (Object.hasOwn(table, k) ? (table[k] ?? []) : []));
  return [...new Set(paths.map((p) => expandHome(p, home)).filter((p): p is string => !!p && isAbsolute(p)))];
}

// A path in a command line or a setting: from / or ~/ or $HOME/, up to a character no
// shell word or JSON/TOML string would carry unquoted (a ':' ends one in a PATH-style list).
const PATH_TOKEN = /(?:~|\$HOME|\$\{HOME\})?\/[^\s"'`;:|&<>(){}[\],\\=]+/g;

/** The absolute paths a setting file names (a hook's command, a notify program), read through the bounded primitive. */
export function namedPaths(file: string, anyHome: string | undefined, L: NamedLimits): string[] {
  const home = usableHome(anyHome);
  let text: string;
  try {
    text = readUserFile(file, { cap: L.state_named_file_bytes, kind: 'CLI setting', overflow: 'truncate' }).bytes.toString('utf8');
  } catch {
    return []; // missing, a folder, or not a regular file
  }
  const out = new Set<string>();
  for (const m of text.matchAll(PATH_TOKEN)) {
    const token = m[0].replace(/[.]+$/, ''); // the end of a sentence, not of the name
    const at = m.index ?? 0;
    // Part of a word (a relative path such as hooks/x.sh) or a URL's //host.
    if ((at > 0 && /[\w.-]/.test(text[at - 1] as string)) || token.startsWith('//')) continue;
    const tail = token.replace(/^(?:~|\$HOME|\$\{HOME\})/, '');
    if (tail !== token && !home) continue;
    const abs = normalize(tail !== token ? join(home as string, tail) : token).replace(/(.)\/+$/, '$1');
    if (abs === '/') continue;
    if (out.size >= L.state_named_paths) break;
    out.add(abs);
  }
  return [...out];
}

/**
 * What tool_state_read_only lists for these keys, and the programs its files name: each a
 * regular file (after links) in the home or the project. A named folder is never one: a
 * setting names folders for other reasons (Codex lists every project you trusted), and
 * holding one read-only could take the project or the state folder itself. A program
 * elsewhere (/usr/bin/python3) is read-only in the sandbox anyway.
 */
export function guardedStatePaths(policy: SandboxPolicy, keys: readonly string[], anyHome: string | undefined, project: string | null, L: NamedLimits): string[] {
  const home = usableHome(anyHome);
  const paths = listed(policy.tool_state_read_only, keys, home);
  // Nothing listed (a command no one reviewed: no keys), nothing named: no real path to look up.
  if (paths.length === 0) return [];
  const places = [home, home && realQuiet(home), project].filter((p): p is string => !!p);
  const named = paths
    .flatMap((p) => namedPaths(p, home, L))
    .filter((p) => places.some((place) => within(p, place) && p !== place) && statFile(p));
  return [...new Set([...paths, ...named])];
}

function statFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The writable state folders (policy tool_state), for these keys. */
export function stateFolders(policy: SandboxPolicy, keys: readonly string[], home: string | undefined): string[] {
  return listed(policy.tool_state, keys, home);
}

/** Whether a writable place (the project, a state folder) shows this path or the file behind it. */
export function shownIn(p: string, places: readonly string[]): boolean {
  const real = realQuiet(p);
  const parent = realQuiet(dirname(p));
  const seen = [p, real, parent && join(parent, basename(p))].filter((x): x is string => !!x);
  return places.some((w) => {
    const rw = realQuiet(w) ?? w;
    return seen.some((x) => within(x, w) || within(x, rw));
  });
}

/** The single files given as a private copy (policy tool_state_private), for these keys. */
export function privateStatePaths(policy: SandboxPolicy, keys: readonly string[], home: string | undefined): string[] {
  return listed(policy.tool_state_private, keys, home);
}

/**
 * bwrap arguments that make each path read-only wherever the sandbox shows it writable:
 * the place inside an open area (a state folder, the project, in the order they are
 * bound) where its real file lies. Only real paths are used, so nothing is bound through
 * a link, which inside the sandbox could lead where nothing is (bwrap would then refuse
 * to start); an area that is itself reached through a link and covered by a later one
 * (a linked state folder in a project that is the home) shows the host's link there, so
 * it is not used. A path that is, or holds, an open area is left alone: it would take
 * that whole area. Each folder between an area and a protected path is bound onto itself
 * first, still writable, so that it cannot be renamed away with the protected file in it
 * (a mount point cannot be renamed) and a new one put in its place.
 */
export function readOnlyStateArgs(paths: readonly string[], open: readonly string[]): string[] {
  // Nothing to hold: no area's real path is needed.
  if (paths.length === 0) return [];
  const all = open.map((w) => ({ w, real: realQuiet(w) })).filter((a): a is { w: string; real: string } => a.real !== null);
  const areas = all.filter((a, i) => a.real === a.w || !all.some((b, j) => j > i && within(a.w, b.w)));
  const views = new Map<string, string>(); // view ─► the area it is in
  for (const p of paths) {
    const r = realQuiet(p);
    if (!r || all.some((a) => within(a.real, r))) continue;
    for (const a of areas) if (within(r, a.real)) views.set(join(a.w, relative(a.real, r)), a.w);
  }
  const folders = new Set<string>();
  for (const [v, area] of views) {
    for (let d = dirname(v); d !== area && within(d, area); d = dirname(d)) folders.add(d);
  }
  // Outer folders first: a bind of a folder would cover a bind made inside it earlier.
  const pinned = [...folders].sort((a, b) => a.split(sep).length - b.split(sep).length).flatMap((d) => ['--bind', d, d]);
  return [...pinned, ...[...views.keys()].flatMap((v) => ['--ro-bind', v, v])];
}
