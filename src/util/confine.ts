/*
 * Confinement to the project by real path: a path is resolved relative to the
 * project, its real path (after every link) must stay inside the project.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { ScError } from '../errors.js';

export function insideProject(project: string, real: string): boolean {
  const rel = relative(project, real);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

export function confinedPath(project: string, path: string, opts: { mustExist: boolean; file?: boolean }): string {
  const abs = resolve(project, path);
  if (!insideProject(project, abs)) throw new ScError('SC_PATH_OUTSIDE', `${path} is outside the project`);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    if (opts.mustExist) throw new ScError('SC_FILE_NOT_FOUND', `${path} does not exist in the project`);
    return abs;
  }
  if (!insideProject(project, real)) throw new ScError('SC_PATH_OUTSIDE', `${path} resolves outside the project`);
  if (opts.file && !statSync(real).isFile()) throw new ScError('SC_FILE_NOT_FOUND', `${path} is not a regular file`);
  return real;
}

/**
 * realpathSync's answer and errors from one realpath(3) in C: the JS one lstats each part of the
 * path from JavaScript (three or four calls per path, many paths per sandboxed start). Normalized
 * first, as the JS one does (`a/link/..` is `a`, never the link's parent).
 */
export const realPath = (p: string): string => realpathSync.native(resolve(p));

/** The real path; the path itself when it is not there (looked at first: a thrown ENOENT per missing path was a sandbox start's largest cost). */
export function realOrSelf(p: string): string {
  if (!lstatSync(p, { throwIfNoEntry: false })) return p;
  try {
    return realPath(p);
  } catch {
    return p;
  }
}
