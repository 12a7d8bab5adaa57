/*
 * The supervisor between the engine and a job's command. It starts the command
 * as the leader of a new process group and stays attached to the engine by its
 * stdin pipe. When that pipe closes (the engine asked to cancel, or died, even
 * by SIGKILL) it sends TERM to the group, waits the grace period, sends KILL,
 * and exits. After a normal exit it still kills the group, so no descendant
 * left in it survives the job.
 *
 *   argv[2]: base64 JSON {argv, cwd, grace_ms}   env: the job's sanitised env
 *   stdout/stderr: the command's   fd 3: one JSON status line at the end
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

interface Spec {
  argv: string[];
  cwd: string;
  grace_ms: number;
}

const spec = JSON.parse(Buffer.from(process.argv[2] ?? '', 'base64').toString('utf8')) as Spec;
const status = createWriteStream('', { fd: 3 });
status.on('error', () => {});
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

const started = Date.now();
const child = spawn(spec.argv[0] as string, spec.argv.slice(1), { cwd: spec.cwd, env: process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
let cancelled = false;
let exited = false;

const group = (signal: NodeJS.Signals) => {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    /* the group is already gone */
  }
};

const finish = (out: Record<string, unknown>) => {
  group('SIGKILL');
  status.end(`${JSON.stringify({ ...out, cancelled, duration_ms: Date.now() - started })}\n`, () => process.exit(0));
};

child.stdout.pipe(process.stdout);
child.stderr.pipe(process.stderr);
child.on('error', (err) => {
  exited = true;
  finish({ code: null, signal: null, error: err.message });
});
child.on('close', (code, signal) => {
  exited = true;
  finish({ code, signal });
});

process.stdin.on('data', () => {});
process.stdin.on('end', () => {
  if (exited) return;
  cancelled = true;
  group('SIGTERM');
  setTimeout(() => group('SIGKILL'), spec.grace_ms);
});
