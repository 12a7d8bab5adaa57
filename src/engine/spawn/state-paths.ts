/*
 * The parts of a toolchain's own state that decide what it runs outside any sandbox the
 * next time the user starts it: the paths policy tool_state_read_only lists (Claude
 * Code's settings.json and hooks, Codex's config.toml), the programs those files name
 * (a hook's script, a status line command, a notify program), and the private files of
 * tool_state_private (Claude Code's ~/.claude.json).
 *
 *   listed paths (~/ expanded) ─► each listed file's text ─► the absolute, ~/ or $HOME/
 *   paths it names (NAMED_PER_FILE at most) ─► guardedStatePaths: all of them, which the
 *   runner compares before and after a task
 *   readOnlyStateArgs(paths, open areas) ─► each path, and the real file behind it, as
 *   seen at every place the sandbox shows it writable (a state folder, the project)
 *   ─► --ro-bind there, on top
 *
 * A link itself is never bound (the folder holding it is writable, so it could be
 * replaced); what it leads to is, where that is visible and writable inside.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import type { Sandbox as SandboxPolicy } from '../../../gen/types/sandbox.js';
import { readUserFile } from '../../util/safe-read.js';

/** How much of a protected file is searched for the paths it names, and how many are kept. */
const NAMED_FILE_BYTES = 1024 * 1024;
const NAMED_PER_FILE = 64;

export const within = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

export function expandHome(p: string, home: string | undefined): string | null {
  if (!p.startsWith('~/')) return p;
  return home ? join(home, p.slice(2)) : null;
}

function realQuiet(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

function listed(table: Record<string, string[]>, keys: readonly string[], home: string | undefined): string[] {
  const paths = keys.flatMap((k) => (Object.hasOwn(table, k) ? (table[k] ?? []) : []));
  return [...new Set(paths.map((p) => expandHome(p, home)).filter((p): p is string => !!p && isAbsolute(p)))];
}

// A path in a command line or a setting: from / or ~/ or $HOME/, up to a character no
// shell word or JSON/TOML string would carry unquoted.
const PATH_TOKEN = /(?:~|\$HOME|\$\{HOME\})?\/[^\s"'`;|&<>(){}[\],\\=]+/g;

/** The absolute paths a setting file names (a hook's command, a notify program), read through the bounded primitive. */
export function namedPaths(file: string, home: string | undefined): string[] {
  let text: string;
  try {
    text = readUserFile(file, { cap: NAMED_FILE_BYTES, kind: 'CLI setting', overflow: 'truncate' }).bytes.toString('utf8');
  } catch {
    return []; // missing, a folder, or not a regular file
  }
  const out = new Set<string>();
  for (const m of text.matchAll(PATH_TOKEN)) {
    const token = m[0];
    const tail = token.replace(/^(?:~|\$HOME|\$\{HOME\})/, '');
    if (tail !== token && !home) continue;
    const abs = normalize(tail !== token ? join(home as string, tail) : token);
    const at = m.index ?? 0;
    if (abs === '/' || (at > 0 && /[\w.:-]/.test(text[at - 1] as string))) continue; // part of a URL or a relative path
    out.add(abs);
    if (out.size >= NAMED_PER_FILE) break;
  }
  return [...out];
}

/**
 * What tool_state_read_only lists for these keys, and every path its files name inside the
 * home (a system program such as /usr/bin/python3 is read-only anyway, and not worth reading
 * before and after every task).
 */
export function guardedStatePaths(policy: SandboxPolicy, keys: readonly string[], home: string | undefined): string[] {
  const paths = listed(policy.tool_state_read_only, keys, home);
  const named = home ? paths.flatMap((p) => namedPaths(p, home)).filter((p) => within(p, home) && p !== home) : [];
  return [...new Set([...paths, ...named])];
}

/** The single files given as a private copy (policy tool_state_private), for these keys. */
export function privateStatePaths(policy: SandboxPolicy, keys: readonly string[], home: string | undefined): string[] {
  return listed(policy.tool_state_private, keys, home);
}

/**
 * bwrap arguments that make each path read-only wherever the sandbox shows it writable:
 * at its own path inside an open area, and at the place inside an open area where its
 * real file lies (a link into the project, a state folder that is a dotfiles checkout).
 */
export function readOnlyStateArgs(paths: readonly string[], open: readonly string[]): string[] {
  const areas = open.map((w) => ({ w, real: realQuiet(w) }));
  const views = new Set<string>();
  for (const p of paths) {
    const r = realQuiet(p);
    for (const a of areas) {
      if (within(p, a.w)) views.add(p);
      if (r && a.real && within(r, a.real)) views.add(join(a.w, relative(a.real, r)));
    }
  }
  const out: string[] = [];
  for (const v of views) {
    const st = lstatSync(v, { throwIfNoEntry: false });
    if (st && !st.isSymbolicLink()) out.push('--ro-bind', v, v);
  }
  return out;
}
