/*
 * Which profile directory a command uses, and making sure it is private.
 *
 *   --profile DIR (has a slash)  ─► that directory
 *   --profile NAME               ─► <data home>/shadowcode/profiles/NAME
 *   SHADOWCODE_HOME              ─► that directory
 *   otherwise                    ─► $XDG_DATA_HOME/shadowcode, or ~/.local/share/shadowcode
 *
 * The choice is resolved once, here, to its real path (a linked SHADOWCODE_HOME or
 * parent directory is followed now), so every command, and every process one
 * spawns (the engine, its clients), names the same directory the same way.
 *
 * The directory is created 0700, and so is every missing directory above it
 * (as the XDG spec asks): `--profile work` used first makes <data home>/shadowcode,
 * which is also the default profile, and profiles/, and neither may be left open
 * to others by the umask. An existing one that other users can read or write, or
 * that another user owns, is refused: state.db and the secret store live there.
 */
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { ScError } from '../errors.js';
import { makeDirs } from '../util/make-dirs.js';

export const PROFILE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface ProfileChoice {
  readonly dir: string;
  /** The value of --profile exactly as given, for launch commands that must reproduce it. */
  readonly explicit: string | undefined;
}

function dataHome(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_DATA_HOME;
  return xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.local', 'share');
}

/** Where the profile is when neither --profile nor SHADOWCODE_HOME says otherwise. */
export function defaultProfileDir(env: NodeJS.ProcessEnv): string {
  return join(dataHome(env), 'shadowcode');
}

export function resolveProfile(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): ProfileChoice {
  if (flag !== undefined) {
    if (flag.includes('/') || flag === '.' || flag === '..') return { dir: realDir(resolve(cwd, flag)), explicit: resolve(cwd, flag) };
    if (!PROFILE_NAME.test(flag)) {
      throw new ScError('SC_PROFILE_INVALID', `profile name "${flag}" must match ${PROFILE_NAME.source}, or be a path containing "/"`);
    }
    return { dir: realDir(join(dataHome(env), 'shadowcode', 'profiles', flag)), explicit: flag };
  }
  if (env.SHADOWCODE_HOME) return { dir: realDir(resolve(cwd, env.SHADOWCODE_HOME)), explicit: undefined };
  return { dir: realDir(defaultProfileDir(env)), explicit: undefined };
}

/** The real path of an absolute directory path; a part not made yet is kept as written below its real parent. */
function realDir(path: string): string {
  try {
    return realpathSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const parent = dirname(path);
    if ((code !== 'ENOENT' && code !== 'ENOTDIR') || parent === path) return path;
    return join(realDir(parent), basename(path));
  }
}

export function ensureProfileDir(dir: string): void {
  try {
    makeDirs(dirname(dir), 0o700);
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ScError('SC_PROFILE_INVALID', `cannot create profile directory ${dir}: ${(err as NodeJS.ErrnoException).code}`);
    }
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw new ScError('SC_PROFILE_INVALID', `profile path ${dir} is not a directory`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
    throw new ScError('SC_PROFILE_UNSAFE', `profile directory ${dir} belongs to another user`);
  }
  if ((st.mode & 0o077) !== 0) {
    throw new ScError('SC_PROFILE_UNSAFE', `profile directory ${dir} has mode ${(st.mode & 0o777).toString(8)}; run chmod 700 ${dir}`, { mode: (st.mode & 0o777).toString(8) });
  }
}
