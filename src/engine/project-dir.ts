/*
 * A project directory held open by descriptor, so a write cannot be raced out
 * of the project by swapping a directory on its path for a link.
 *
 *   open(project, relDir): the project, then each component looked up in the
 *   directory opened before it (/proc/self/fd/N/name, O_DIRECTORY|O_NOFOLLOW);
 *   a link is followed only after its real target is checked to be a directory
 *   inside the project ─► the descriptor's own path must be inside the project
 *   ─► names are reached as /proc/self/fd/N/name: a later swap of any path
 *   component cannot redirect them
 *   write(name): temp file (O_EXCL|O_NOFOLLOW) ─► fsync ─► verify ─► rename
 *   within the same descriptor ─► verify again (a directory moved out of the
 *   project meanwhile: the file is taken back out and the write fails)
 *   every failure: the temp file is removed; errors are SC_WRITE_RACED,
 *   SC_PATH_OUTSIDE, SC_FILE_NOT_FOUND or SC_FILE_REFUSED, never SC_INTERNAL
 *
 * Without /proc (not Linux) the same steps run on real paths, checked before
 * and after; the window between check and use is then small but not closed.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fchmodSync, fsyncSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { ScError } from '../errors.js';
import { insideProject } from '../util/confine.js';

const PROC = process.platform === 'linux' && existsSync('/proc/self/fd');
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0);
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** A failed system call during a write, as one of our stable codes. */
export function writeError(err: unknown, shown: string): ScError {
  if (err instanceof ScError) return err;
  const code = errno(err);
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ESTALE') return new ScError('SC_WRITE_RACED', `${shown}: its directory changed while it was written (${code}); nothing was written`);
  return new ScError('SC_FILE_REFUSED', `${shown} cannot be written (${code ?? (err as Error).message})`);
}

export class ProjectDir {
  private closed = false;

  private constructor(
    private readonly project: string,
    private readonly fd: number,
    /** The directory's real path when it was opened (the path used when there is no /proc). */
    private readonly opened: string,
    readonly rel: string,
  ) {}

  /** Opens a project-relative directory (every component must exist) without ever leaving the project. */
  static open(project: string, relDir: string): ProjectDir {
    const parts = relDir.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw new ScError('SC_PATH_OUTSIDE', `${relDir} is outside the project`);
    let fd = openSync(project, DIR_FLAGS);
    let real = project;
    try {
      for (const part of parts) {
        const here = PROC ? `/proc/self/fd/${fd}/${part}` : join(real, part);
        let next: number;
        try {
          next = openSync(here, DIR_FLAGS | NOFOLLOW);
        } catch (err) {
          const code = errno(err);
          if (code !== 'ELOOP' && code !== 'ENOTDIR') throw err;
          let st;
          try {
            st = lstatSync(here);
          } catch (e) {
            throw writeError(e, relDir);
          }
          if (!st.isSymbolicLink()) throw new ScError('SC_FILE_NOT_FOUND', `${relative(project, join(real, part)) || part} is not a directory`);
          // A link to a directory inside the project is a directory here; one that leaves it is refused.
          const target = realpathSync(here);
          if (!insideProject(project, target)) throw new ScError('SC_PATH_OUTSIDE', `${relDir} is below a link that leaves the project`);
          next = openSync(target, DIR_FLAGS);
        }
        closeSync(fd);
        fd = next;
        real = ProjectDir.pathOf(fd, join(real, part));
        if (!insideProject(project, real)) throw new ScError('SC_PATH_OUTSIDE', `${relDir} resolves outside the project`);
      }
    } catch (err) {
      closeSync(fd);
      if (err instanceof ScError) throw err;
      const code = errno(err);
      if (code === 'ENOENT') throw new ScError('SC_FILE_NOT_FOUND', `${relDir} does not exist in the project`);
      throw writeError(err, relDir);
    }
    return new ProjectDir(project, fd, real, parts.join('/'));
  }

  private static pathOf(fd: number, fallback: string): string {
    if (!PROC) return realpathSync(fallback);
    const p = readlinkSync(`/proc/self/fd/${fd}`);
    if (p.endsWith(' (deleted)')) throw new ScError('SC_WRITE_RACED', 'the directory was removed while it was written; nothing was written');
    return p;
  }

  /** A name inside this very directory, whatever happens to the path that led here. */
  at(name: string): string {
    if (name.includes('/') || name.includes(sep) || name === '..' || name === '.' || name === '') throw new ScError('SC_PATH_OUTSIDE', `${name} is not a plain file name`);
    return PROC ? `/proc/self/fd/${this.fd}/${name}` : join(this.opened, name);
  }

  /** The directory's real path now; SC_WRITE_RACED when it is no longer inside the project. `check` sees it too (protected paths). */
  verify(check?: (real: string) => void): string {
    const real = ProjectDir.pathOf(this.fd, this.opened);
    if (!insideProject(this.project, real)) throw new ScError('SC_WRITE_RACED', `${this.rel || '.'} was moved out of the project while it was written; nothing was written`);
    check?.(real);
    return real;
  }

  /** Makes a subdirectory here (0755). Returns false when one already exists. */
  mkdir(name: string): boolean {
    try {
      mkdirSync(this.at(name), { mode: 0o755 });
      return true;
    } catch (err) {
      if (errno(err) === 'EEXIST') return false;
      throw writeError(err, name);
    }
  }

  /** Replaces (or creates) `name` with `content` atomically; no temp file survives a failure. */
  write(name: string, content: Buffer, mode: number, check?: (real: string) => void): void {
    const tmp = `.${randomBytes(6).toString('hex')}.shadowcode.tmp`;
    let fd: number | undefined;
    let tmpMade = false;
    try {
      this.verify(check);
      const tmpPath = this.at(tmp);
      // Created new (O_EXCL), never through a link: a write-only descriptor of our own temp file.
      fd = openSync(tmpPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, mode);
      tmpMade = true;
      for (let off = 0; off < content.length; ) off += writeSync(fd, content, off, content.length - off);
      fsyncSync(fd);
      fchmodSync(fd, mode);
      closeSync(fd);
      fd = undefined;
      this.verify(check);
      renameSync(this.at(tmp), this.at(name));
      tmpMade = false;
      try {
        this.verify(check);
      } catch (err) {
        // Moved out between the check and the rename: take the file back out of wherever it went.
        try {
          unlinkSync(this.at(name));
        } catch {
          /* already gone */
        }
        throw err;
      }
    } catch (err) {
      throw writeError(err, name);
    } finally {
      if (fd !== undefined) closeSync(fd);
      if (tmpMade) {
        try {
          unlinkSync(this.at(tmp));
        } catch {
          /* the directory itself is gone */
        }
      }
    }
  }

  /** Removes `name` from this directory, after the same check. */
  unlink(name: string, check?: (real: string) => void): void {
    try {
      this.verify(check);
      unlinkSync(this.at(name));
    } catch (err) {
      throw writeError(err, name);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
