/*
 * `engine start` without --foreground: this CLI starts `engine start --foreground`
 * as a detached process (its own session, no terminal, output to engine.log) and
 * returns once that engine answers on its socket, or reports why it did not.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { packageRoot } from '../../util/paths.js';
import { startOwnProgram } from '../spawn/index.js';
import type { EngineFiles } from './files.js';

export interface Launched {
  readonly pid: number;
  /** Resolves with the exit code if the process ends (it lost a start race, or failed). */
  readonly exited: Promise<number | null>;
}

export function launchEngine(ticket: GateTicket, files: EngineFiles, env: NodeJS.ProcessEnv): Launched {
  assertTicket(ticket, 'cli:engine.start');
  let log: number;
  try {
    // Never through a link: engine.log is ours, in the private profile directory.
    log = openSync(files.log, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ScError('SC_ENGINE_START_FAILED', code === 'ELOOP' ? `${files.log} is a symbolic link; remove it and start again` : `cannot open ${files.log}: ${code}`);
  }
  try {
    const child = startOwnProgram(ticket, join(packageRoot(), 'bin', 'shadowcode.js'), ['--profile', files.dir, 'engine', 'start', '--foreground'], {
      detached: true,
      stdio: ['ignore', log, log],
      env,
      cwd: files.dir,
    });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    child.unref();
    return { pid: child.pid ?? 0, exited };
  } finally {
    closeSync(log);
  }
}
