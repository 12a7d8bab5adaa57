/*
 * The before/after picture of a project around a coding CLI's run. The CLI
 * edits files by its own means (its edit tools, shell commands), so the only
 * honest record is a comparison: snapshot the tracked files before, walk again
 * after, and record each difference as a change with the prior state as its
 * checkpoint (engine/files.ts recordObservedChange).
 *
 *   takeSnapshot(before, keep content) ─► CLI runs ─► takeSnapshot(after, hashes)
 *   ─► diffSnapshots ─► added | modified | deleted ─► recorded (or listed unrecorded)
 *
 * The walk never follows links, skips .git and what .gitignore files ignore,
 * and stops at the file, byte and depth limits, saying so. A link whose real
 * target is inside the project is then followed once to that target, which is
 * recorded under its real path (even where .gitignore would skip it): a write
 * through the link is a change there, reviewable and rolled back like any. A file whose prior
 * content was not kept (too large, or past the byte budget) cannot be restored,
 * so its change is listed but never recorded with an empty checkpoint.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type FileState, readState } from '../../engine/files.js';
import { type IgnoreRule, isIgnored, parseGitignore } from '../../engine/gitignore.js';
import { ScError } from '../../errors.js';
import { insideProject } from '../../util/confine.js';
import { type DirEntry, listProjectDir, tryReadProjectFile } from '../../util/safe-read.js';

export interface SnapshotLimits {
  readonly snapshot_files: number;
  readonly snapshot_bytes: number;
  readonly snapshot_file_bytes: number;
  readonly snapshot_depth: number;
  readonly gitignore_bytes: number;
}

export interface Entry {
  readonly state: FileState;
  /** The prior content is kept, so the file can be restored. */
  readonly restorable: boolean;
  /** For files not hashed (too large or past the budget): size and mtime stand in. */
  readonly stamp: string;
}

export interface Snapshot {
  readonly files: Map<string, Entry>;
  readonly truncated: string | null;
}

export function takeSnapshot(project: string, limits: SnapshotLimits, keepContent: boolean): Snapshot {
  const files = new Map<string, Entry>();
  let budget = limits.snapshot_bytes;
  let truncated: string | null = null;
  const gitignore = (rel: string): string => {
    try {
      return tryReadProjectFile(project, rel ? `${rel}/.gitignore` : '.gitignore', { cap: limits.gitignore_bytes, kind: '.gitignore', overflow: 'truncate', links: 'refuse' })?.bytes.toString('utf8') ?? '';
    } catch {
      return '';
    }
  };
  const stampOf = (rel: string): string => {
    try {
      const st = lstatSync(join(project, rel));
      return `${st.size}:${st.mtimeMs}:${st.mode & 0o7777}`;
    } catch {
      return 'gone';
    }
  };
  const walked = new Set<string>();
  const links: string[] = [];
  const walk = (rel: string, depth: number, rules: IgnoreRule[]): void => {
    if (truncated) return;
    walked.add(rel);
    let list: DirEntry[];
    try {
      list = listProjectDir(project, rel);
    } catch {
      return;
    }
    const local = list.some((d) => d.name === '.gitignore' && d.kind === 'file') ? [...rules, ...parseGitignore(gitignore(rel), rel)] : rules;
    for (const d of list) {
      if (truncated) return;
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.kind === 'link') links.push(path);
      if (d.name === '.git' || d.kind === 'link' || d.kind === 'other') continue;
      if (isIgnored(local, path, d.kind === 'dir')) continue;
      if (d.kind === 'dir') {
        if (depth + 1 < limits.snapshot_depth) walk(path, depth + 1, local);
        else truncated = `directories deeper than ${limits.snapshot_depth} levels are not compared`;
        continue;
      }
      record(path);
    }
  };
  const record = (path: string): void => {
    if (files.has(path)) return;
    if (files.size >= limits.snapshot_files) {
      truncated = `only the first ${limits.snapshot_files} files are compared`;
      return;
    }
    const stamp = stampOf(path);
    let state: FileState;
    try {
      state = readState(project, path, limits.snapshot_file_bytes);
    } catch (err) {
      if (!(err instanceof ScError)) throw err;
      files.set(path, { state: { exists: true, content: null, mode: null, sha: null }, restorable: false, stamp });
      return;
    }
    const size = state.content?.length ?? 0;
    const keep = keepContent && size <= budget;
    if (keep) budget -= size;
    else if (keepContent && !truncated) truncated = `file contents past ${limits.snapshot_bytes} bytes are not kept; those files cannot be rolled back`;
    files.set(path, { state: keep ? state : { ...state, content: null }, restorable: keep, stamp });
  };
  walk('', 0, []);
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
    else if (!walked.has(rel)) walk(rel, rel.split('/').length - 1, []);
  }
  return { files, truncated };
}

export interface Difference {
  readonly path: string;
  readonly kind: 'added' | 'modified' | 'deleted';
  readonly before: FileState;
  readonly after_sha: string | null;
  /** False when the prior content is unknown: listed, never recorded. */
  readonly restorable: boolean;
}

const ABSENT: FileState = { exists: false, content: null, mode: null, sha: null };

export function diffSnapshots(before: Snapshot, after: Snapshot): Difference[] {
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
