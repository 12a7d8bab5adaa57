/*
 * Runs an approved command under the supervisor (runner-child.ts), in the
 * project directory, with a literal argv and the sanitised environment.
 *
 *   runCommand(ticket, spec) ─► node dist/job-runner.js ─► command (own process group)
 *   cancel() closes the supervisor's stdin ─► TERM, grace, KILL to the group
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { assertTicket, type GateTicket } from '../ticket.js';
import { packageRoot } from '../util/paths.js';

export interface CommandSpec {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly graceMs: number;
}

export interface CommandResult {
  readonly code: number | null;
  readonly signal: string | null;
  readonly cancelled: boolean;
  readonly duration_ms: number;
  readonly error?: string;
}

export interface CommandHandle {
  readonly done: Promise<CommandResult>;
  cancel(): void;
}

export function runCommand(ticket: GateTicket, spec: CommandSpec, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void): CommandHandle {
  assertTicket(ticket, 'job:run');
  const payload = Buffer.from(JSON.stringify({ argv: spec.argv, cwd: spec.cwd, grace_ms: spec.graceMs })).toString('base64');
  const sup = spawn(process.execPath, [join(packageRoot(), 'dist', 'job-runner.js'), payload], { env: spec.env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
  sup.stdout.on('data', (c: Buffer) => onOutput('stdout', c));
  sup.stderr.on('data', (c: Buffer) => onOutput('stderr', c));
  sup.stdin.on('error', () => {});
  let status = '';
  (sup.stdio[3] as Readable).on('data', (d: Buffer) => (status += d));
  const done = new Promise<CommandResult>((resolve) => {
    sup.on('close', (code) => {
      try {
        resolve(JSON.parse(status) as CommandResult);
      } catch {
        resolve({ code: null, signal: null, cancelled: true, duration_ms: 0, error: `supervisor exited ${code}` });
      }
    });
  });
  return { done, cancel: () => sup.stdin.end() };
}
