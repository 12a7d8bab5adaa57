/*
 * The picture of a project's files that every change watch compares against
 * (change-watch.ts): what a coding CLI, an approved command, a test job or a
 * background process changed is found by walking again and comparing.
 *
 *   takeSnapshot(first: contents kept) ─► the rules of each .gitignore as read then (frozen)
 *   takeSnapshot(again: the stamps known) ─► a file whose stamp is the one known is not read again
 *   ─► diffSnapshots ─► added | modified | deleted
 *
 * A file's stamp is its device, inode, size, mode and modification and change times
 * (to the microsecond: finer than the clock tick file times are taken from). A process
 * can set the modification time back, but not the change time: the kernel sets it on
 * every write, rename and time change. A file whose times are within RACY_MS of the
 * walk is read again next time anyway, so a second write in the same clock tick as
 * our read is not missed. (The plain lstat, not the BigInt one: it builds no Date.)
 *
 * The walk never follows links, skips .git and what .gitignore files ignore, and
 * stops at the file, byte and depth limits, saying so. The .gitignore rules are the
 * ones read by the first walk, passed back to every later one: a task that adds or
 * rewrites a .gitignore cannot hide its next change. Directories named in
 * `alsoCompared` (node_modules/.bin: what package runners put first on PATH) are
 * compared even where ignored, and so is an ignored file or folder that
 * `comparedWhenIgnored` takes (a protected path: an ignored `local.mk` still runs). A link whose real target is inside the project is
 * followed once to that target, recorded under its real path (even where .gitignore
 * would skip it): a write through the link is a change there. A file whose prior
 * content was not kept (too large, or past the byte budget) cannot be restored.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ScError } from '../errors.js';
import { holdsSecret } from '../policy/scrub.js';
import { insideProject } from '../util/confine.js';
import { type DirEntry, listProjectDir, tryReadProjectFile } from '../util/safe-read.js';
import { type FileState, readState } from './files.js';
import { type IgnoreRule, isIgnored, parseGitignore } from './gitignore.js';

export interface SnapshotLimits {
  readonly snapshot_files: number;
  readonly snapshot_bytes: number;
  readonly snapshot_file_bytes: number;
  readonly snapshot_depth: number;
  readonly gitignore_bytes: number;
}

/** What an earlier walk learnt of a file, enough to skip reading it again. */
export interface Known {
  readonly stamp: string;
  readonly sha: string | null;
  readonly mode: number | null;
  readonly racy: boolean;
}

export interface Entry {
  readonly state: FileState;
  /** The prior content is kept, so the file can be restored. */
  readonly restorable: boolean;
  /** Device, inode, size, mode, mtime and ctime: equal stamps mean an unchanged file. */
  readonly stamp: string;
  /** Changed so recently that an equal stamp next time proves nothing: read again. */
  readonly racy: boolean;
}

export interface Snapshot {
  readonly files: Map<string, Entry>;
  /** Why the walk stopped before the end (the file or depth limit): files past it are not compared. */
  readonly truncated: string | null;
  /** Why some prior contents were not kept (the byte budget): those files are compared, not restorable. */
  readonly unkept: string | null;
  /** The .gitignore texts the walk used, by directory ('' is the root). */
  readonly ignores: Record<string, string>;
}

export interface SnapshotOptions {
  /** Keep each file's content (within snapshot_bytes), so it can be restored. */
  readonly keepContent: boolean;
  /** Files seen before: one whose stamp is unchanged (and not racy) is not read again. */
  readonly known?: ReadonlyMap<string, Known>;
  /** The .gitignore texts to apply, by directory, instead of the ones on disk now. */
  readonly ignores?: Readonly<Record<string, string>>;
  /** Project-relative directories compared even where .gitignore ignores them. */
  readonly alsoCompared?: readonly string[];
  /**
   * Whether an ignored file or folder is compared all the same: a protected path (a `local.mk`
   * the Makefile includes, an `.envrc`, a `lefthook-local.yml`) that runs code later, however
   * the project's .gitignore treats it. A folder it takes is compared whole.
   */
  readonly comparedWhenIgnored?: (path: string, isDir: boolean) => boolean;
  /** A project-relative folder never walked: the profile, when it lies inside the project (shadowcode's own files, which it writes itself). */
  readonly skip?: string | null;
  /**
   * Files compared even when the walk stopped at the file limit before them (the files of the
   * baseline): many new files made before them in the walk cannot hide a change to a `Makefile`.
   * At most as many as the baseline holds, itself within the limit.
   */
  readonly mustCompare?: Iterable<string>;
}

/** Two seconds: wider than any file system's time granularity we meet (FAT's is two seconds). */
const RACY_MS = 2000;

export function takeSnapshot(project: string, limits: SnapshotLimits, opts: SnapshotOptions): Snapshot {
  const files = new Map<string, Entry>();
  const ignores: Record<string, string> = {};
  const startMs = Date.now();
  let budget = limits.snapshot_bytes;
  let truncated: string | null = null;
  let unkept: string | null = null;
  const gitignore = (rel: string): string => {
    if (opts.ignores) return opts.ignores[rel] ?? '';
    let text = '';
    try {
      text = tryReadProjectFile(project, rel ? `${rel}/.gitignore` : '.gitignore', { cap: limits.gitignore_bytes, kind: '.gitignore', overflow: 'truncate', links: 'refuse' })?.bytes.toString('utf8') ?? '';
    } catch {
      /* unreadable: no rules */
    }
    ignores[rel] = text;
    return text;
  };
  const walked = new Set<string>();
  const links: string[] = [];
  const walk = (rel: string, depth: number, rules: IgnoreRule[], ignoring: boolean): void => {
    if (truncated) return;
    walked.add(rel);
    let list: DirEntry[];
    try {
      list = listProjectDir(project, rel);
    } catch {
      return;
    }
    const hasOwn = opts.ignores ? opts.ignores[rel] !== undefined : list.some((d) => d.name === '.gitignore' && d.kind === 'file');
    const local = ignoring && hasOwn ? [...rules, ...parseGitignore(gitignore(rel), rel)] : rules;
    for (const d of list) {
      if (truncated) return;
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.kind === 'link') links.push(path);
      if (d.name === '.git' || d.kind === 'link' || d.kind === 'other' || path === opts.skip) continue;
      if (ignoring && isIgnored(local, path, d.kind === 'dir')) {
        if (!opts.comparedWhenIgnored?.(path, d.kind === 'dir')) continue;
        if (d.kind === 'dir') {
          if (depth + 1 < limits.snapshot_depth) walk(path, depth + 1, [], false);
          else truncated = `directories deeper than ${limits.snapshot_depth} levels are not compared`;
          continue;
        }
      }
      if (d.kind === 'dir') {
        if (depth + 1 < limits.snapshot_depth) walk(path, depth + 1, local, ignoring);
        else truncated = `directories deeper than ${limits.snapshot_depth} levels are not compared`;
        continue;
      }
      record(path);
    }
  };
  const record = (path: string, always = false): void => {
    if (files.has(path)) return;
    if (!always && files.size >= limits.snapshot_files) {
      truncated = `only the first ${limits.snapshot_files} files are compared`;
      return;
    }
    // Stamped before it is read: a write between the two leaves an old stamp, so the next walk reads it again.
    let stamp = 'gone';
    let racy = true;
    try {
      const st = lstatSync(`${project}/${path}`);
      stamp = `${st.dev}:${st.ino}:${st.size}:${st.mode}:${st.mtimeMs}:${st.ctimeMs}`;
      racy = st.ctimeMs >= startMs - RACY_MS || st.mtimeMs >= startMs - RACY_MS;
    } catch {
      /* gone meanwhile: read below says so */
    }
    const known = opts.known?.get(path);
    if (known && !known.racy && known.stamp === stamp) {
      files.set(path, { state: { exists: true, content: null, mode: known.mode, sha: known.sha }, restorable: false, stamp, racy: false });
      return;
    }
    let state: FileState;
    try {
      state = readState(project, path, limits.snapshot_file_bytes);
    } catch (err) {
      if (!(err instanceof ScError)) throw err;
      files.set(path, { state: { exists: true, content: null, mode: null, sha: null }, restorable: false, stamp, racy });
      if (opts.keepContent) unkept ??= `files larger than ${limits.snapshot_file_bytes} bytes are compared by their stamp only and cannot be rolled back`;
      return;
    }
    if (!state.exists) return;
    const size = state.content?.length ?? 0;
    // A copy of a file that holds a secret value (a .env, a leaked secrets.json) would put that
    // secret into the profile's store: such a file is compared by its hash only.
    const secret = opts.keepContent && state.content !== null && holdsSecret(state.content.toString('utf8'));
    const keep = opts.keepContent && !secret && size <= budget;
    if (keep) budget -= size;
    else if (secret) unkept ??= 'files that hold a known secret value are compared by their hash only: their content is never copied into the profile, so their changes cannot be rolled back';
    else if (opts.keepContent) unkept ??= `file contents past ${limits.snapshot_bytes} bytes are not kept; those files cannot be rolled back`;
    files.set(path, { state: keep ? state : { ...state, content: null }, restorable: keep, stamp, racy });
  };
  walk('', 0, [], true);
  for (const dir of opts.alsoCompared ?? []) {
    if (truncated || walked.has(dir)) continue;
    try {
      if (!lstatSync(join(project, dir)).isDirectory()) continue;
    } catch {
      continue;
    }
    walk(dir, dir.split('/').length, [], false);
  }
  // Links to somewhere inside the project: their targets are compared too, under their real paths.
  for (let i = 0; i < links.length && !truncated; i++) {
    let real: string;
    try {
      real = realpathSync(join(project, links[i] as string));
    } catch {
      continue;
    }
    if (!insideProject(project, real) || real === project) continue;
    const rel = relative(project, real);
    if (rel === '.git' || rel.startsWith('.git/')) continue;
    let isDir = false;
    try {
      isDir = statSync(real).isDirectory();
    } catch {
      continue;
    }
    if (!isDir) record(rel);
    else if (!walked.has(rel)) walk(rel, rel.split('/').length - 1, [], true);
  }
  if (truncated) for (const path of opts.mustCompare ?? []) record(path, true);
  return { files, truncated, unkept, ignores: opts.ignores ? { ...opts.ignores } : ignores };
}

export interface Difference {
  readonly path: string;
  readonly kind: 'added' | 'modified' | 'deleted';
  readonly before: FileState;
  readonly after_sha: string | null;
  /** False when the prior content is unknown: listed, never restored. */
  readonly restorable: boolean;
}

const ABSENT: FileState = { exists: false, content: null, mode: null, sha: null };

/** Compares by content hash where both sides have one, else by stamp. */
export function diffSnapshots(before: Pick<Snapshot, 'files'>, after: Pick<Snapshot, 'files'>): Difference[] {
  const out: Difference[] = [];
  for (const [path, b] of before.files) {
    const a = after.files.get(path);
    if (!a) out.push({ path, kind: 'deleted', before: b.state, after_sha: null, restorable: b.restorable });
    else {
      const same = b.state.sha !== null && a.state.sha !== null ? b.state.sha === a.state.sha && b.state.mode === a.state.mode : b.stamp === a.stamp;
      if (!same) out.push({ path, kind: 'modified', before: b.state, after_sha: a.state.sha, restorable: b.restorable && a.state.sha !== null });
    }
  }
  for (const [path, a] of after.files) {
    if (!before.files.has(path)) out.push({ path, kind: 'added', before: ABSENT, after_sha: a.state.sha, restorable: a.state.sha !== null });
  }
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
}
