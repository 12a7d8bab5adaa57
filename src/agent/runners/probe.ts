/*
 * `model list` and `model probe` for a coding-CLI runner: is the executable
 * there, and what does `COMMAND --version` say. Only that one argument is run
 * (never the fixed args, never a prompt), in its own process group with the
 * sanitised environment, in the sandbox (no project, no network), under a
 * deadline, with the output capped; on the deadline the whole group is killed.
 *
 *   probeRunner(ticket cli:model.list|probe, entry) ─► found? ─► COMMAND --version ─► first line
 */
import { startDirect } from '../../engine/spawn/index.js';
import { ScError } from '../../errors.js';
import type { Policy } from '../../policy/load.js';
import type { Db } from '../../store/db.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { checkExecutable, runnerEnv } from './spawn.js';

export interface RunnerProbe {
  readonly id: string;
  readonly provider: string;
  readonly command: string;
  readonly found: boolean;
  readonly version: string | null;
  readonly status: 'ok' | 'not_found' | 'fail';
  readonly detail: string;
}

export interface ProbeLimits {
  readonly version_deadline_ms: number;
  readonly version_output_bytes: number;
}

/** Whether the runner's executable exists and may be run, without running it. */
export function runnerFound(command: string): { found: boolean; detail: string } {
  try {
    checkExecutable(command);
    return { found: true, detail: 'found' };
  } catch (err) {
    return { found: false, detail: err instanceof ScError ? err.message : String(err) };
  }
}

export function probeRunner(ticket: GateTicket, entry: { id: string; provider: string; command?: string }, policy: Policy, db: Db, env: NodeJS.ProcessEnv): Promise<RunnerProbe> {
  assertTicket(ticket, ['cli:model.list', 'cli:model.probe']);
  const command = entry.command ?? '';
  const base = { id: entry.id, provider: entry.provider, command };
  const found = runnerFound(command);
  if (!found.found) return Promise.resolve({ ...base, found: false, version: null, status: 'not_found', detail: found.detail });
  const limits: ProbeLimits = policy.limits.runners;
  return new Promise((resolve) => {
    let child: ReturnType<typeof startDirect>['child'];
    try {
      child = startDirect(ticket, {
        kind: 'probe', argv: [command, '--version'], cwd: '/', env: runnerEnv(policy.environment, env, ['HOME']), stdio: ['ignore', 'pipe', 'pipe'],
        confine: { project: null, network: false }, trustedArgv: true, policy, db,
      }).child;
    } catch (err) {
      return resolve({ ...base, found: true, version: null, status: 'fail', detail: err instanceof ScError ? err.message : (err as Error).message });
    }
    let out = '';
    const take = (d: Buffer) => {
      if (out.length < limits.version_output_bytes) out += d.toString('utf8').slice(0, limits.version_output_bytes - out.length);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', () => {});
    let late = false;
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(() => {
      late = true;
      kill();
    }, limits.version_deadline_ms);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ ...base, found: true, version: null, status: 'fail', detail: err.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      kill();
      const version = out.trim().split('\n')[0]?.trim() || null;
      if (late) resolve({ ...base, found: true, version: null, status: 'fail', detail: `--version did not finish within ${limits.version_deadline_ms} ms` });
      else if (code !== 0) resolve({ ...base, found: true, version, status: 'fail', detail: `--version exited ${code}` });
      else resolve({ ...base, found: true, version, status: 'ok', detail: 'answered --version' });
    });
  });
}
