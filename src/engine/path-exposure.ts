/*
 * Whether the project's own files would run as your commands: a PATH entry that is the
 * project or a folder in it (`~/src/app/bin`, `~/src/app/node_modules/.bin`), or a
 * relative one (`.`, an empty entry, `bin`), which is inside the project whenever you
 * run something there. An approved command may write those folders (the sandbox leaves
 * the project writable), and the `git` or `ls` it puts there is what your shell runs
 * next, outside any sandbox.
 *
 *   PATH ─► each entry ─► relative ─► listed (inside the project when you are in it)
 *                      └► absolute ─► real path (as far as it exists: a folder made later counts) inside the project ─► listed
 *   ─► the entries, in PATH order; doctor warns, trust says so
 */
import { delimiter, isAbsolute } from 'node:path';
import { realForm } from '../policy/protected-paths.js';
import { insideProject } from '../util/confine.js';

export interface PathExposure {
  readonly entry: string;
  readonly why: 'inside' | 'relative';
}

/** The PATH entries through which the project's files would run as commands. */
export function projectOnPath(project: string, path: string | undefined): PathExposure[] {
  if (path === undefined) return [];
  const root = realForm(project);
  const out: PathExposure[] = [];
  for (const entry of path.split(delimiter)) {
    if (!isAbsolute(entry)) out.push({ entry, why: 'relative' });
    else if (insideProject(root, realForm(entry))) out.push({ entry, why: 'inside' });
  }
  return out;
}

/** One line for a person: which entries, and why it matters. */
export function describeExposure(project: string, found: readonly PathExposure[]): string {
  const names = found.map((f) => (f.why === 'relative' ? `${JSON.stringify(f.entry)} (relative: the current folder's, so the project's when you work in it)` : f.entry));
  return `PATH runs programs from inside ${project}: ${names.join(', ')}. A command a task runs can write there, and what it leaves (a git, an ls) is what your shell runs next, outside any sandbox; take these entries out of PATH`;
}
