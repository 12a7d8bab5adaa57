/*
 * Protected paths: policy/protected-paths.json read as rules over project paths.
 *
 *   path as a task named it ─► lexical form: resolved against the project, relative
 *                          └─► real form: the deepest existing ancestor's real path + the rest
 *   each form inside the project ─► never_write rules ─► the profile (when inside) ─► needs_approval
 *   a write no pattern refuses ─► the project's protected layout (protected-scan.ts): what a
 *          protected link leads to, what git config names (core.hooksPath, …) ─► refuse
 *   ─► PathVerdict { effect: refuse | approve | open, rule, matched, via }
 *
 * Both forms are judged and the strictest wins, so `./.git/../.git/config`, a
 * trailing slash, `.GIT/config` and a link pointing into .git all meet the same
 * rule. Matching ignores case: on a case-insensitive file system `.GIT` is
 * `.git`, and on a sensitive one refusing `.GIT` costs nothing. A verdict is
 * only as fresh as the file system it read; the writer checks the real path of
 * the directory it actually opened again (engine/files.ts).
 */
import { realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import type { ProtectedPaths } from '../../gen/types/protected-paths.js';
import { ScError } from '../errors.js';
import { insideProject } from '../util/confine.js';
import type { Policy } from './load.js';
import { coveredBy, protectedLayout } from './protected-scan.js';

export type PathAccess = 'read' | 'write';

export interface PathVerdict {
  /** refuse: never (SC_PATH_PROTECTED); approve: its own exact approval with the diff; open: the ordinary rules. */
  readonly effect: 'refuse' | 'approve' | 'open';
  /** The deciding rule's id, or null when none matched. */
  readonly rule: string | null;
  readonly list: 'never_write' | 'profile' | 'needs_approval' | null;
  readonly description: string | null;
  /** The project-relative form that matched ('/'-separated), or the lexical form when none did. */
  readonly matched: string;
  /** Why the path is protected when no pattern names it: "the link .claude leads here", "core.hooksPath in .git/config". */
  readonly via?: string;
}

/** What a sandbox or another enforcer needs: the patterns, and the plain paths among them (no wildcard). */
export interface ProtectedPathList {
  /** Patterns a task never writes (project-relative; a pattern covers everything below it). */
  readonly never_write: readonly string[];
  /** The never_write paths at the top of the project: patterns without wildcards, and the NAME of each pattern `**` + `/NAME`, e.g. `.git`, `.mcp.json`. */
  readonly never_write_literal: readonly string[];
  /** Patterns whose change needs its own approval with the complete diff. */
  readonly needs_approval: readonly string[];
  /** Whether the profile directory is hidden from reads too (not only writes). */
  readonly profile_hidden: boolean;
}

/** The protected-path lists of a policy, for the sandbox's read-only binds and anything else that enforces them. */
export function protectedPaths(policy: Policy): ProtectedPathList {
  const p = policy.protected_paths;
  const never = p.never_write.flatMap((r) => r.paths);
  return {
    never_write: never,
    never_write_literal: [...new Set(never.map((x) => x.replace(/^\*\*\//, '')).filter((x) => !x.includes('*')))],
    needs_approval: p.needs_approval.flatMap((r) => r.paths),
    profile_hidden: p.profile.refuse_reads,
  };
}

const compiled = new WeakMap<ProtectedPaths, Array<{ list: 'never_write' | 'needs_approval'; id: string; description: string; re: RegExp[] }>>();

function patternRe(pattern: string): RegExp {
  // A pattern covers what it names and everything below it, so a trailing `/**` adds nothing.
  const segs = pattern.replace(/(\/\*\*)+$/, '').split('/');
  const body = segs.map((seg) => (seg === '**' ? '(?:[^/]+/)*' : `${seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}/`)).join('');
  return new RegExp(`^${body.replace(/\/$/, '')}(?:/.*)?$`, 'i');
}

function rulesOf(p: ProtectedPaths) {
  let r = compiled.get(p);
  if (!r) {
    r = [
      ...p.never_write.map((x) => ({ list: 'never_write' as const, id: x.id, description: x.description, re: x.paths.map(patternRe) })),
      ...p.needs_approval.map((x) => ({ list: 'needs_approval' as const, id: x.id, description: x.description, re: x.paths.map(patternRe) })),
    ];
    compiled.set(p, r);
  }
  return r;
}

const anyPattern = new WeakMap<ProtectedPaths, (rel: string) => boolean>();

/**
 * Whether a project-relative path is protected by a pattern (never_write or needs_approval),
 * outside the dependency and cache folders of `scan.skip` (node_modules, .venv: installed code
 * that installs rewrite wholesale). For the change watch, which compares such a path even where
 * .gitignore ignores it: an ignored `local.mk` or `.envrc` still runs when the user builds.
 */
export function protectedByPattern(policy: Policy): (rel: string) => boolean {
  const p = policy.protected_paths;
  let test = anyPattern.get(p);
  if (!test) {
    const skip = new Set(p.scan.skip.map((x) => x.toLowerCase()));
    // One expression for all the patterns: a build tree can hold thousands of ignored files.
    const re = new RegExp(rulesOf(p).flatMap((r) => r.re.map((x) => x.source)).join('|'), 'i');
    test = (rel) => !rel.split('/').some((seg) => skip.has(seg.toLowerCase())) && re.test(rel);
    anyPattern.set(p, test);
  }
  return test;
}

/** The real path of `abs`, following every link that exists; the part that does not exist yet is kept as written. */
export function realForm(abs: string): string {
  const rest: string[] = [];
  let head = abs;
  for (;;) {
    try {
      return join(realpathSync(head), ...rest.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return abs;
      rest.push(basename(head));
      head = up;
    }
  }
}

function slashed(rel: string): string {
  return sep === '/' ? rel : rel.split(sep).join('/');
}

/** Inside, ignoring case: on a case-insensitive file system `HOME/x` is `home/x`. */
function insideLower(dir: string, path: string): boolean {
  return insideProject(dir.toLowerCase(), path.toLowerCase());
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Which rule decides a read or write of `path` in `project` (its canonical real
 * path). `profile` is the profile directory in use; it is protected wherever
 * it lies. Paths outside the project are `open` here: confinement refuses them.
 */
export function pathVerdict(policy: Policy, project: string, path: string, access: PathAccess, profile?: string): PathVerdict {
  const p = policy.protected_paths;
  const abs = resolve(project, path);
  const forms = [abs];
  const real = realForm(abs);
  if (real !== abs) forms.push(real);
  const lexical = slashed(relative(project, abs));
  const profileReal = profile ? realOrSelf(profile) : undefined;
  const profileLex = profile ? resolve(profile) : undefined;
  let approve: PathVerdict | undefined;
  const rels: string[] = [];
  for (const f of forms) {
    if (profileReal && profileLex && (insideLower(profileReal, f) || insideLower(profileLex, f)) && (access === 'write' || p.profile.refuse_reads)) {
      return { effect: 'refuse', rule: p.profile.id, list: 'profile', description: p.profile.description, matched: slashed(relative(project, f)) };
    }
    if (!insideProject(project, f)) continue;
    const rel = slashed(relative(project, f));
    if (rel === '') continue;
    rels.push(rel);
    for (const r of rulesOf(p)) {
      if (!r.re.some((re) => re.test(rel))) continue;
      if (r.list === 'never_write' && access === 'write') return { effect: 'refuse', rule: r.id, list: r.list, description: r.description, matched: rel };
      if (r.list === 'needs_approval' && access === 'write') approve ??= { effect: 'approve', rule: r.id, list: r.list, description: r.description, matched: rel };
    }
  }
  if (access === 'write' && rels.length > 0) {
    // What no pattern can name: the target of a protected link, the hooks folder git config names.
    const layout = protectedLayout(policy, project);
    for (const rel of rels) {
      const e = coveredBy(layout, rel);
      if (e) return { effect: 'refuse', rule: e.rule, list: 'never_write', description: e.description, matched: rel, ...(e.via ? { via: e.via } : {}) };
    }
  }
  return approve ?? { effect: 'open', rule: null, list: null, description: null, matched: lexical };
}

/** The profile's project-relative path ('/'-separated) when it lies inside the project, else null. */
export function profileInside(project: string, profile: string): string | null {
  const real = realOrSelf(profile);
  if (!insideProject(project, real) || real === project) return real === project ? '' : null;
  return slashed(relative(project, real));
}

/** Throws SC_PATH_PROTECTED when the verdict refuses; returns it otherwise. */
export function assertPathAllowed(policy: Policy, project: string, path: string, access: PathAccess, profile?: string): PathVerdict {
  const v = pathVerdict(policy, project, path, access, profile);
  if (v.effect === 'refuse') throw protectedError(v, path, access);
  return v;
}

export function protectedError(v: PathVerdict, path: string, access: PathAccess): ScError {
  const what = v.list === 'profile' ? 'is inside the shadowcode profile directory' : `is protected (${v.matched}${v.via ? `: ${v.via}` : ''})`;
  return new ScError('SC_PATH_PROTECTED', `${path} ${what}; a task may not ${access} it [rule ${v.rule}: ${v.description}]`, { path, rule: v.rule, access });
}
