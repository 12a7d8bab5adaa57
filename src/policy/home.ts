/*
 * Whether a project holds the user's home folder: it is `/`, the home itself, or a folder
 * above it. Such a project would hand a task the shell's start-up files, the git and SSH
 * configuration and every key in the home, so the policy refuses to trust it and refuses
 * work in it (policy/permissions.json, rule project-holds-home, on the attribute
 * project.holds_home that the gate fills in from the path).
 *
 *   HOME (as this process sees it) + the account's home (passwd) ─► real paths (once each)
 *   project real path ─► '/' or a folder at or above one of them ─► true
 *
 * The gate asks on every decision with the same few paths: the folders are kept per value
 * of HOME and the last answer per list of folders (a pure function of the strings), so a
 * decision about the same project costs one lookup here, not a path walk.
 */
import { realpathSync } from 'node:fs';
import { userInfo } from 'node:os';
import { isAbsolute } from 'node:path';
import { insideProject } from '../util/confine.js';

const reals = new Map<string, string>();
let account: string | null | undefined;
/** The last answer of homeFolders, by the HOME it was for. */
let last: { readonly home: string | undefined; readonly folders: string[] } | undefined;
/** The last answer per list of home folders (by identity): a process asks about its one project, again and again. */
const answers = new WeakMap<readonly string[], { readonly project: string; readonly holds: boolean }>();

function real(p: string): string {
  let r = reals.get(p);
  if (r === undefined) {
    try {
      r = realpathSync(p);
    } catch {
      r = p;
    }
    reals.set(p, r);
  }
  return r;
}

/** The home folders of this user: $HOME and the account's own (they differ under sudo or a changed HOME). */
export function homeFolders(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  if (account === undefined) {
    try {
      account = userInfo().homedir || null;
    } catch {
      account = null;
    }
  }
  if (last && last.home === env.HOME) return last.folders;
  const folders = [...new Set([env.HOME, account].filter((h): h is string => typeof h === 'string' && isAbsolute(h) && h !== '/').map(real))];
  Object.freeze(folders);
  last = { home: env.HOME, folders };
  return folders;
}

/** Whether the project (a canonical real path) is /, a home folder, or holds one. */
export function holdsHome(project: string, homes: readonly string[] = homeFolders()): boolean {
  const known = answers.get(homes);
  if (known?.project === project) return known.holds;
  const holds = project === '/' || homes.some((h) => insideProject(project, h));
  // Only a list that cannot change is remembered (homeFolders' own are frozen; a caller's may be edited).
  if (Object.isFrozen(homes)) answers.set(homes, { project, holds });
  return holds;
}
