/*
 * The one way shadowcode reads a file that someone else controls: anything in
 * a project (manifests, .gitignore, project definitions, test detection, the
 * project map, SQLite headers, checkpoints) and any path a user names on the
 * command line (`mcp add FILE`, `plugin install DIR`). Anyone who can commit to
 * a project controls its files, so a read must never hang, never grow without
 * bound and never leave the project.
 *
 *   project real path ─► path stays inside it (lexically, then the real path of
 *   its directory) ─► lstat: a link resolves inside the project, or is refused
 *   ─► only a regular file (FIFO, device, socket, directory: SC_FILE_REFUSED,
 *   never opened) ─► open O_RDONLY|O_NOFOLLOW|O_NONBLOCK ─► fstat the descriptor:
 *   still the same regular file ─► /proc/self/fd: the open file is inside the
 *   project ─► size ≤ cap (else SC_FILE_TOO_LARGE, or the first cap bytes when
 *   asked) ─► positional reads of at most cap bytes ─► close
 *
 * Nothing here blocks on a FIFO or a device: they are refused from lstat and,
 * if one is swapped in between lstat and open, O_NONBLOCK makes the open return
 * at once and fstat refuses it. A 1 GiB sparse file costs one fstat. Failures
 * are ScErrors with stable codes: SC_FILE_NOT_FOUND, SC_PATH_OUTSIDE,
 * SC_FILE_REFUSED, SC_FILE_TOO_LARGE; never SC_INTERNAL.
 *
 * API (every cap comes from policy/limits.json; callers pass it):
 *   readProjectFile(project, rel, { cap, kind, overflow?, offset?, links? })
 *       → { bytes, size, truncated, path }     whole file, or bytes [offset, offset+cap)
 *   tryReadProjectFile(…)                      same, but undefined when the file is absent
 *   readProjectLines(project, rel, { start, count, cap, kind })
 *       → { lines, size, truncated, path }     lines start..start+count-1 (1-based),
 *                                              scanning at most cap bytes
 *   readUserFile(path, { cap, kind })          a regular file a user named, anywhere
 *   listProjectDir(project, rel)               entries of one directory, kinds from lstat
 *   dirStamp(abs), listDirNoFollow(abs)        a folder's identity and times, and its entries, for
 *                                              a walk that enters only what a listing showed as a
 *                                              folder (no realpath per folder: the protected-path scan)
 *   openFolderNoFollow(abs)                    a folder's descriptor, never through a link: a walk
 *                                              that writes below it by /proc/self/fd/N (the caches' fill)
 *   walkProject(project, { maxDepth, visit })  a breadth-first walk that never follows links
 *
 * `kind` names the file in messages ("manifest", "definition", ...). `links`:
 * 'inside' (default) reads a link whose real target is a regular file inside
 * the project; 'refuse' refuses every link (project definitions).
 */
import { closeSync, constants, type Dirent, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ScError } from '../errors.js';
import { insideProject as insideRoot, realPath } from './confine.js';

export interface ReadOptions {
  /** The most bytes this read may return (from policy/limits.json). */
  readonly cap: number;
  /** What the file is, for messages: "manifest", ".gitignore", "definition", "file". */
  readonly kind: string;
  /** Past the cap: 'error' (default) refuses with SC_FILE_TOO_LARGE; 'truncate' returns the first cap bytes. */
  readonly overflow?: 'error' | 'truncate';
  /** Start reading here (bytes); with overflow 'truncate' this pages through a large file. */
  readonly offset?: number;
  /** 'inside' (default): a link is read when its real target is inside the project; 'refuse': never. */
  readonly links?: 'inside' | 'refuse';
}

export interface ReadResult {
  readonly bytes: Buffer;
  /** The file's full size, from fstat of the opened descriptor. */
  readonly size: number;
  /** The file's mode bits, from the same fstat. */
  readonly mode: number;
  /** Whether bytes stop before the end of the file. */
  readonly truncated: boolean;
  /** The real path that was read. */
  readonly path: string;
}

const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const PROC_FD = process.platform === 'linux';

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

function describe(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a directory';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Turns a failed system call into one of our stable codes. */
function fsError(err: unknown, shown: string, kind: string): ScError {
  if (err instanceof ScError) return err;
  const code = errno(err);
  if (code === 'ENOENT' || code === 'ENOTDIR') return new ScError('SC_FILE_NOT_FOUND', `${kind} ${shown} does not exist`);
  if (code === 'ELOOP') return new ScError('SC_FILE_REFUSED', `${kind} ${shown} became a symbolic link while it was opened; refused`);
  return new ScError('SC_FILE_REFUSED', `${kind} ${shown} cannot be read (${code ?? (err as Error).message})`);
}

/** The real path to open for a project-relative path, with every check that needs no descriptor. */
function resolveInProject(project: string, rel: string, kind: string, links: 'inside' | 'refuse'): { target: string; lst: Stats; root: string } {
  const root = realpathSync(project);
  const abs = resolve(root, rel);
  if (!insideRoot(root, abs)) throw new ScError('SC_PATH_OUTSIDE', `${kind} ${rel} is outside the project`);
  let target = root;
  if (abs !== root) {
    let dir: string;
    try {
      dir = realpathSync(dirname(abs));
    } catch (err) {
      throw fsError(err, rel, kind);
    }
    if (!insideRoot(root, dir)) throw new ScError('SC_PATH_OUTSIDE', `${kind} ${rel} is below a link that leaves the project`);
    target = join(dir, basename(abs));
  }
  let lst: Stats;
  try {
    lst = lstatSync(target);
    if (lst.isSymbolicLink()) {
      if (links === 'refuse') throw new ScError('SC_FILE_REFUSED', `${kind} ${rel} is a symbolic link; it must be a plain file`);
      target = realpathSync(target);
      if (!insideRoot(root, target)) throw new ScError('SC_PATH_OUTSIDE', `${kind} ${rel} is a link that resolves outside the project`);
      lst = lstatSync(target);
    }
  } catch (err) {
    throw fsError(err, rel, kind);
  }
  return { target, lst, root };
}

function refuseSpecial(st: Stats, shown: string, kind: string): void {
  if (!st.isFile()) throw new ScError('SC_FILE_REFUSED', `${kind} ${shown} is ${describe(st)}; only regular files are read`);
}

/** Opens without following a link or waiting on a FIFO, and checks the descriptor is the file that was checked. */
function openChecked(target: string, lst: Stats, shown: string, kind: string, root: string | null): { fd: number; st: Stats } {
  let fd: number;
  try {
    fd = openSync(target, OPEN_FLAGS);
  } catch (err) {
    throw fsError(err, shown, kind);
  }
  try {
    const st = fstatSync(fd);
    refuseSpecial(st, shown, kind);
    if (st.ino !== lst.ino || st.dev !== lst.dev) throw new ScError('SC_FILE_REFUSED', `${kind} ${shown} was replaced while it was opened; refused`);
    if (root !== null && PROC_FD) {
      // The descriptor's own path: a directory swapped for a link after the checks above shows here.
      let opened: string | undefined;
      try {
        opened = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        opened = undefined;
      }
      if (opened !== undefined && !insideRoot(root, opened)) throw new ScError('SC_PATH_OUTSIDE', `${kind} ${shown} resolves outside the project`);
    }
    return { fd, st };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function readBounded(fd: number, st: Stats, shown: string, opts: ReadOptions): { bytes: Buffer; truncated: boolean } {
  const offset = Math.max(0, Math.floor(opts.offset ?? 0));
  const rest = Math.max(0, st.size - offset);
  if (rest > opts.cap && (opts.overflow ?? 'error') === 'error') {
    throw new ScError('SC_FILE_TOO_LARGE', `${opts.kind} ${shown} is ${st.size} bytes, over the ${opts.cap}-byte cap for a ${opts.kind}`, { size: st.size, cap: opts.cap });
  }
  // One byte past the cap tells a file that grew since fstat from one that fits exactly.
  const want = Math.min(opts.cap + 1, rest + 1);
  const buf = Buffer.alloc(want);
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buf, got, want - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  if (got > opts.cap) {
    if ((opts.overflow ?? 'error') === 'error') throw new ScError('SC_FILE_TOO_LARGE', `${opts.kind} ${shown} grew past the ${opts.cap}-byte cap while it was read`, { cap: opts.cap });
    return { bytes: buf.subarray(0, opts.cap), truncated: true };
  }
  return { bytes: buf.subarray(0, got), truncated: offset + got < st.size };
}

/** Reads a regular file inside the project, bounded by opts.cap. */
export function readProjectFile(project: string, rel: string, opts: ReadOptions): ReadResult {
  const { target, lst, root } = resolveInProject(project, rel, opts.kind, opts.links ?? 'inside');
  refuseSpecial(lst, rel, opts.kind);
  const { fd, st } = openChecked(target, lst, rel, opts.kind, root);
  try {
    const { bytes, truncated } = readBounded(fd, st, rel, opts);
    return { bytes, size: st.size, mode: st.mode, truncated, path: target };
  } finally {
    closeSync(fd);
  }
}

/** As readProjectFile, but a file that does not exist is undefined rather than an error. */
export function tryReadProjectFile(project: string, rel: string, opts: ReadOptions): ReadResult | undefined {
  try {
    return readProjectFile(project, rel, opts);
  } catch (err) {
    if (err instanceof ScError && err.code === 'SC_FILE_NOT_FOUND') return undefined;
    throw err;
  }
}

export interface LinesResult {
  readonly lines: string[];
  readonly size: number;
  /** Whether the file goes on past the last line returned (or the scan stopped at the cap). */
  readonly truncated: boolean;
  readonly path: string;
}

/** Lines start..start+count-1 (1-based) of a project file, scanning at most cap bytes from its start. */
export function readProjectLines(project: string, rel: string, opts: { start: number; count: number; cap: number; kind: string; links?: 'inside' | 'refuse' }): LinesResult {
  const { target, lst, root } = resolveInProject(project, rel, opts.kind, opts.links ?? 'inside');
  refuseSpecial(lst, rel, opts.kind);
  const { fd, st } = openChecked(target, lst, rel, opts.kind, root);
  try {
    const first = Math.max(1, Math.floor(opts.start));
    const last = first + Math.max(0, Math.floor(opts.count)) - 1;
    const out: Buffer[] = [];
    const chunk = Buffer.alloc(Math.min(65536, Math.max(1, opts.cap)));
    let line = 1;
    let pos = 0;
    let current: Buffer[] = [];
    let done = false;
    while (!done && pos < opts.cap) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, opts.cap - pos), pos);
      if (n === 0) break;
      let from = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, from);
        if (nl === -1 || nl >= n) break;
        if (line >= first) out.push(Buffer.concat([...current, chunk.subarray(from, nl)]));
        current = [];
        from = nl + 1;
        if (++line > last) {
          done = true;
          break;
        }
      }
      if (!done && line >= first && from < n) current.push(Buffer.from(chunk.subarray(from, n)));
      pos += done ? from : n;
    }
    const atEnd = pos >= st.size;
    if (!done && atEnd && current.length) out.push(Buffer.concat(current));
    return { lines: out.map((b) => b.toString('utf8').replace(/\r$/, '')), size: st.size, truncated: !atEnd, path: target };
  } finally {
    closeSync(fd);
  }
}

/** A regular file at a path a user gave (anywhere on disk), bounded like a project read. Links are followed; their target must be a regular file. */
export function readUserFile(path: string, opts: Omit<ReadOptions, 'links' | 'offset'>): ReadResult {
  let target: string;
  let lst: Stats;
  try {
    target = realPath(path);
    lst = lstatSync(target);
  } catch (err) {
    throw fsError(err, path, opts.kind);
  }
  refuseSpecial(lst, path, opts.kind);
  const { fd, st } = openChecked(target, lst, path, opts.kind, null);
  try {
    const { bytes, truncated } = readBounded(fd, st, path, opts);
    return { bytes, size: st.size, mode: st.mode, truncated, path: target };
  } finally {
    closeSync(fd);
  }
}

export type EntryKind = 'file' | 'dir' | 'link' | 'other';

export interface DirEntry {
  readonly name: string;
  readonly kind: EntryKind;
}

function kindOf(d: Dirent): EntryKind {
  return d.isSymbolicLink() ? 'link' : d.isDirectory() ? 'dir' : d.isFile() ? 'file' : 'other';
}

/** The entries of one project directory, sorted by name; the directory itself must be a real directory inside the project (not a link). */
export function listProjectDir(project: string, rel: string): DirEntry[] {
  const { target, lst } = resolveInProject(project, rel === '' ? '.' : rel, 'directory', 'refuse');
  if (!lst.isDirectory()) throw new ScError('SC_FILE_REFUSED', `directory ${rel || '.'} is ${describe(lst)}`);
  let list: Dirent[];
  try {
    list = readdirSync(target, { withFileTypes: true });
  } catch (err) {
    throw fsError(err, rel || '.', 'directory');
  }
  return list.map((d) => ({ name: d.name, kind: kindOf(d) })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A folder's inode and times (lstat: a link is not a folder); null when it is not a folder now. */
export function dirStamp(abs: string): { ino: number; ctimeMs: number; mtimeMs: number } | null {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  return st?.isDirectory() ? { ino: st.ino, ctimeMs: st.ctimeMs, mtimeMs: st.mtimeMs } : null;
}

/**
 * The entries of a folder, kinds from the listing itself (a link is a link), unsorted; null
 * when it cannot be read. For a walk that starts at the project and enters only entries
 * listed as folders, checked with dirStamp just before: a listing opens nothing but the
 * folder, so it cannot block, and no entry is followed.
 */
/**
 * A folder's descriptor (read-only), never through a link at its last step (O_NOFOLLOW: ELOOP)
 * and never a file (O_DIRECTORY: ENOTDIR); null then, or when it is gone. A path below it
 * through /proc/self/fd/N names that very folder, whatever its own path leads to later.
 */
export function openFolderNoFollow(abs: string): number | null {
  try {
    return openSync(abs, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
}

export function listDirNoFollow(abs: string): DirEntry[] | null {
  try {
    return readdirSync(abs, { withFileTypes: true }).map((d) => ({ name: d.name, kind: kindOf(d) }));
  } catch {
    return null;
  }
}

export interface WalkOptions {
  /** Directories deeper than this (the project root is depth 0) are not entered. */
  readonly maxDepth: number;
  /**
   * Called once per directory with its entries; returns the names of the
   * subdirectories to enter (links are never entered, whatever it returns), or
   * false to stop the whole walk.
   */
  readonly visit: (dir: string, entries: readonly DirEntry[], depth: number) => readonly string[] | false;
}

/** Walks the project depth-first in name order, never following a link; an unreadable directory is skipped. */
export function walkProject(project: string, opts: WalkOptions): void {
  const step = (dir: string, depth: number): boolean => {
    let entries: DirEntry[];
    try {
      entries = listProjectDir(project, dir);
    } catch {
      return true;
    }
    const enter = opts.visit(dir, entries, depth);
    if (enter === false) return false;
    if (depth + 1 > opts.maxDepth) return true;
    const dirs = new Set(entries.filter((e) => e.kind === 'dir').map((e) => e.name));
    for (const name of enter) {
      if (!dirs.has(name)) continue;
      if (!step(dir ? `${dir}/${name}` : name, depth + 1)) return false;
    }
    return true;
  };
  step('', 0);
}
