/*
 * What a sandboxed process wrote where nothing is kept: its home and /tmp are empty in-memory
 * folders of its own, gone with the sandbox. A command that succeeded while writing its results
 * there (a server keeping its data in ~/memory.jsonl) must be told, never left to find out later.
 *
 *   reportFile()             ─► an empty file of ours (0600, in our temp folder), bound into the
 *                              sandbox at its own path; the report shell (sandbox.ts) runs the
 *                              command, then lists what is left on the private home and /tmp there
 *   readDiscarded(file, line) ─► its lines: absolute paths in the home or /tmp only, none a mount
 *                              point of the command line (what was bound in is not discarded),
 *                              bounded ─► {count, paths} ─► the file removed
 *   discardedNotice(d)       ─► the words for a job's result, the model, the terminal
 *
 * The process may write anything into that file: what is read back is only ever a list of paths
 * it names in places it owned, shown as inert text.
 */
import { randomFillSync } from 'node:crypto';
import { chownSync, closeSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import { readUserFile } from '../../util/safe-read.js';
import { within } from './state-paths.js';

export interface Discarded {
  /** How many files and links were left (a lower bound when `more`). */
  readonly count: number;
  /** The first of them (at most 20). */
  readonly paths: readonly string[];
  /** The list stopped at limits.sandbox.discarded_entries. */
  readonly more: boolean;
}

const SHOWN = 20;

/**
 * Random bytes for the report files' names, drawn from the system's generator a block at a time
 * (a call per start was a visible part of a start's own cost); each byte is used for one name only.
 */
const pool = Buffer.alloc(384);
let drawn = pool.length;
function randomHex(bytes: number): string {
  if (drawn + bytes > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  const hex = pool.toString('hex', drawn, drawn + bytes);
  pool.fill(0, drawn, drawn + bytes);
  drawn += bytes;
  return hex;
}

/**
 * os.tmpdir(), asked again only when a variable it reads changed (each ask reads the environment the
 * careful way, several system calls); /tmp where it names no absolute folder (os.tmpdir() passes a
 * relative TMPDIR on, which would put the report file in whatever folder this process runs in).
 */
let tmpFor: string | null = null;
let tmpAnswer = '';
function ourTmp(): string {
  // An unset variable and one set to the text "undefined" are different keys.
  const key = [process.env.TMPDIR, process.env.TMP, process.env.TEMP].map((v) => (v === undefined ? '' : `=${v}`)).join('\0');
  if (key !== tmpFor) {
    const t = tmpdir();
    tmpAnswer = isAbsolute(t) ? t : '/tmp';
    tmpFor = key;
  }
  return tmpAnswer;
}

/** An empty report file for one start, in the temp folder of the user the sandbox runs as (their TMPDIR, else ours), owned by them. */
let made = 0;
export function reportFile(tmp: string | undefined, owner?: number): { file: string; remove: () => void } {
  const base = tmp && isAbsolute(tmp) && statSync(tmp, { throwIfNoEntry: false })?.isDirectory() ? tmp : ourTmp();
  // One new file, never one that was there (wx: O_EXCL, no link followed): a single create, cheaper than a folder.
  const file = join(base, `shadowcode-out-${process.pid}-${++made}-${randomHex(6)}`);
  closeSync(openSync(file, 'wx', 0o600));
  if (owner !== undefined && owner !== process.getuid?.()) chownSync(file, owner, owner);
  return { file, remove: () => rmSync(file, { force: true }) };
}

/**
 * What the report says the process left behind, without what the command line bound into the home
 * or /tmp (`mounted`: those are not discarded) and without anything that is not a path there.
 */
export function readDiscarded(file: string, home: string | undefined, mounted: readonly string[], entries: number): Discarded | null {
  let text: string;
  try {
    text = readUserFile(file, { cap: Math.min(entries, 100000) * 4096, kind: 'sandbox report', overflow: 'truncate' }).bytes.toString('utf8');
  } catch {
    return null;
  }
  const places = [...(home && isAbsolute(home) && home !== '/' ? [home] : []), '/tmp'];
  const lines = text.split('\n').filter(Boolean);
  const paths: string[] = [];
  let count = 0;
  for (const l of lines.slice(0, entries)) {
    // Printable, absolute, normal, in a private place, and not a mount point we made.
    if (l.length > 4096 || /[\u0000-\u001f\u007f]/.test(l) || !isAbsolute(l) || normalize(l) !== l) continue;
    if (!places.some((p) => within(l, p) && l !== p) || mounted.includes(l) || l === file) continue;
    count++;
    if (paths.length < SHOWN) paths.push(l);
  }
  return count ? { count, paths, more: lines.length >= entries } : null;
}

/** In words: what was lost and how to keep it next time. */
export function discardedNotice(d: Discarded, project: string | null): string {
  const list = d.paths.join(', ');
  const rest = d.count > d.paths.length ? ` and ${d.count - d.paths.length}${d.more ? '+' : ''} more` : '';
  const fix = project ? `: write such files in the project, or grant their folder (shadowcode --project ${project} sandbox allow DIR --write; a server: its definition's sandbox.write)` : '';
  return `wrote ${d.count}${d.more ? '+' : ''} file${d.count === 1 ? '' : 's'} in its private home or /tmp, which the sandbox discarded when it ended: ${list}${rest}${fix}`;
}
