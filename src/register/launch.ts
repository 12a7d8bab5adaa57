/*
 * The literal launch command a client will run: the real Node executable, the
 * real installed CLI entry, then our own arguments. A CLI running from a
 * temporary place (an npx cache, the temp directory) is refused: the path a
 * client remembers must still exist tomorrow.
 */
import { realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { ScError } from '../errors.js';
import { packageRoot } from '../util/paths.js';
import { VERSION } from '../version.js';

export interface LaunchInput {
  readonly project: string;
  readonly profile: string | undefined;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
}

export interface Launch {
  readonly command: string;
  readonly args: string[];
}

/** Where this process would be found by a client: the real paths of node and of bin/shadowcode.js. */
export function installedEntry(): { node: string; entry: string } {
  return { node: realpathSync(process.execPath), entry: realpathSync(join(packageRoot(), 'bin', 'shadowcode.js')) };
}

/** The OS temp directory as Node would choose it for this environment, and its real path. */
function tempRoots(env: NodeJS.ProcessEnv): string[] {
  const dir = (env.TMPDIR || env.TMP || env.TEMP || '/tmp').replace(/\/+$/, '') || '/';
  const roots = [dir];
  try {
    roots.push(realpathSync(dir));
  } catch {
    /* a temp dir that does not exist cannot contain us */
  }
  return roots;
}

export function checkPersistent(paths: readonly string[], env: NodeJS.ProcessEnv, markers: readonly string[]): void {
  for (const p of paths) {
    const marker = markers.find((m) => p.includes(m));
    const temp = tempRoots(env).find((root) => p === root || p.startsWith(root + sep));
    if (marker || temp) {
      throw new ScError(
        'SC_REGISTER_TEMPORARY',
        `${p} is in a temporary location (${marker ? `a package-runner cache, ${marker}` : `the temp directory ${temp}`}) that may be gone when your client starts it. Install shadowcode persistently (from a checkout: npm ci && npm run build && npm link; or npm pack there and npm install -g ./shadowcode-${VERSION}.tgz), then run mcp register from that install.`,
        { path: p },
      );
    }
  }
}

export function launchCommand(node: string, entry: string, i: LaunchInput): Launch {
  const args = [entry, '--project', i.project];
  if (i.profile !== undefined) args.push('--profile', i.profile);
  args.push('mcp', 'serve');
  if (i.allowWrite) args.push('--allow-write');
  if (i.allowApprovals) args.push('--allow-approvals');
  return { command: node, args };
}
