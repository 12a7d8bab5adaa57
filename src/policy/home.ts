/*
 * Whether a project holds the user's home folder: it is `/`, the home itself, or a folder
 * above it. Such a project would hand a task the shell's start-up files, the git and SSH
 * configuration and every key in the home, so the policy refuses to trust it and refuses
 * work in it (policy/permissions.json, rule project-holds-home, on the attribute
 * project.holds_home that the gate fills in from the path).
 *
 *   HOME (as this process sees it) + the account's home (passwd) ─► real paths (once each)
 *   project real path ─► '/' or a folder at or above one of them ─► true
 */
import { realpathSync } from 'node:fs';
import { userInfo } from 'node:os';
import { isAbsolute } from 'node:path';
import { insideProject } from '../util/confine.js';

const reals = new Map<string, string>();
let account: string | null | undefined;

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
export function homeFolders(env: NodeJS.ProcessEnv = process.env): string[] {
  if (account === undefined) {
    try {
      account = userInfo().homedir || null;
    } catch {
      account = null;
    }
  }
  return [...new Set([env.HOME, account].filter((h): h is string => typeof h === 'string' && isAbsolute(h) && h !== '/').map(real))];
}

/** Whether the project (a canonical real path) is /, a home folder, or holds one. */
export function holdsHome(project: string, homes: readonly string[] = homeFolders()): boolean {
  return project === '/' || homes.some((h) => insideProject(project, h));
}
