/*
 * Watches the parts of a coding CLI's own state that configure what it runs outside any
 * sandbox when the user starts it (Claude Code's settings.json with its hooks, Codex's
 * config.toml with its notify command and MCP servers: policy tool_state_read_only).
 * The sandbox binds those that exist read-only, but it cannot cover one that is missing
 * (a command could create it) or a link (it could be replaced), and an unsandboxed run
 * covers nothing. So each is fingerprinted before the run and again after it, and any
 * difference is told to the user, who is the one about to start that CLI.
 *
 *   guardState(paths) ─► fingerprints ─► (the run) ─► changed() ─► [{path, was, now}]
 *
 * A fingerprint is the kind and, for a file, its size and sha256 (past limits.runners.state_file_hash_bytes,
 * its size and times instead); for a folder, every entry below it (up to state_folder_entries, and where it
 * stopped) by name, kind, size and change time; for a link, where it points and the
 * fingerprint of what is there. Everything is read through the bounded primitive: a
 * command may have left a FIFO or a huge file where a setting was expected.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readlinkSync, realpathSync, type Stats, statSync } from 'node:fs';
import { join } from 'node:path';
import { readUserFile, walkProject } from '../../util/safe-read.js';

/** The bounds of one comparison (policy limits.runners). */
export interface GuardLimits {
  readonly state_file_hash_bytes: number;
  readonly state_folder_entries: number;
  readonly state_folder_depth: number;
}

export type StateKind = 'missing' | 'file' | 'folder' | 'link' | 'other';

export interface StateChange {
  readonly path: string;
  readonly was: StateKind;
  readonly now: StateKind;
}

interface Print {
  readonly kind: StateKind;
  readonly digest: string;
}

function kindOf(st: Stats | undefined): StateKind {
  if (!st) return 'missing';
  if (st.isSymbolicLink()) return 'link';
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'folder';
  return 'other';
}

/** A folder's entries below it: names, kinds, sizes and change times (which a command cannot set back), and those of what a link among them leads to. */
function folderDigest(path: string, hash: ReturnType<typeof createHash>, L: GuardLimits): void {
  const root = realpathSync(path);
  let left = L.state_folder_entries;
  walkProject(root, {
    maxDepth: L.state_folder_depth,
    visit: (dir, entries) => {
      for (const e of entries) {
        if (--left < 0) {
          // A change past the cap goes unseen: the fingerprint says where it stopped.
          hash.update(`\0truncated at ${dir}/${e.name}`);
          return false;
        }
        const at = join(root, dir, e.name);
        const st = lstatSync(at, { throwIfNoEntry: false });
        hash.update(`${dir}/${e.name}\0${e.kind}\0${st?.size}\0${st?.ctimeMs}\0${st?.mtimeMs}\n`);
        if (e.kind === 'link') {
          const to = statSync(at, { throwIfNoEntry: false });
          hash.update(`${readlinkSync(at)}\0${to?.size}\0${to?.ctimeMs}\0${to?.mtimeMs}\n`);
        }
      }
      return entries.filter((e) => e.kind === 'dir').map((e) => e.name);
    },
  });
}

/**
 * A file's content, through the bounded primitive, when it is the size of a setting or a
 * script; a larger one (a program a setting names) by its size and times, which a write
 * moves and a command cannot set back (ctime), so it is never read whole before and after
 * every task.
 */
function fileDigest(path: string, hash: ReturnType<typeof createHash>, L: GuardLimits): void {
  const st = statSync(path);
  if (st.size > L.state_file_hash_bytes) {
    hash.update(`${st.size}\0${st.ino}\0${st.mtimeMs}\0${st.ctimeMs}`);
    return;
  }
  const r = readUserFile(path, { cap: L.state_file_hash_bytes, kind: 'CLI setting', overflow: 'truncate' });
  hash.update(`${r.size}\0`).update(r.bytes);
}

function print(path: string, L: GuardLimits): Print {
  const hash = createHash('sha256');
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    const kind = kindOf(st);
    if (kind === 'link') {
      // Where it points, and what is there: editing the target is as good as editing the path.
      hash.update(`${readlinkSync(path)}\0`);
      const to = kindOf(statSync(path, { throwIfNoEntry: false }));
      hash.update(`${to}\0`);
      if (to === 'file') fileDigest(path, hash, L);
      else if (to === 'folder') folderDigest(path, hash, L);
    } else if (kind === 'file') fileDigest(path, hash, L);
    else if (kind === 'folder') folderDigest(path, hash, L);
    else if (st) hash.update(`${st.mode}\0${st.ctimeMs}`);
    return { kind, digest: hash.digest('hex') };
  } catch (err) {
    // Unreadable, or swapped for something else while read: its error is its fingerprint, so a change still shows.
    return { kind: 'other', digest: (err as { code?: string }).code ?? 'error' };
  }
}

/** Fingerprints the paths now; the returned function lists those that differ when it is called. */
export function guardState(paths: readonly string[], L: GuardLimits): () => StateChange[] {
  const before = new Map(paths.map((p) => [p, print(p, L)]));
  return () => {
    const out: StateChange[] = [];
    for (const [path, was] of before) {
      const now = print(path, L);
      if (now.kind !== was.kind || now.digest !== was.digest) out.push({ path, was: was.kind, now: now.kind });
    }
    return out;
  };
}
