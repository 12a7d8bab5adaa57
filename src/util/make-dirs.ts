/*
 * `mkdir -p` that always returns. Node 20's recursive mkdirSync never returns for a
 * path below a filesystem that answers ENOENT for a directory it cannot hold (/proc,
 * /sys): it retries the same parent for ever. The paths given here come from the user's
 * environment (SHADOWCODE_HOME, XDG_CACHE_HOME, HOME), so one such value would hang every
 * command.
 *
 *   dir ─► walk up to the first part that exists ─► make each missing part, top down,
 *          once ─► the first failure is thrown (EEXIST from a racing maker is fine)
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeDirs(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); ) {
    missing.push(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, mode === undefined ? undefined : { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
