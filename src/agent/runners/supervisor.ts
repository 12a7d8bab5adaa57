/*
 * The supervisor between a task and a coding CLI. It starts the CLI as the
 * leader of a new process group and stays tied to the task's process by a pipe
 * on fd 3 that the task never writes. When that pipe ends (the task cancelled,
 * or its process died, even by SIGKILL) or the supervisor is signalled, it sends
 * TERM to the group, waits the grace period and sends KILL. After the CLI exits
 * it kills the group anyway, so nothing the CLI left in it outlives the run.
 *
 *   argv[2]: base64 JSON {argv, cwd, grace_ms}   env: the runner's sanitised env
 *   stdin ─► the CLI's stdin   the CLI's stdout/stderr ─► ours
 *   fd 3: liveness (EOF = stop)   fd 4: one JSON status line at the end
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Socket } from 'node:net';

interface Spec {
  argv: string[];
  cwd: string;
  grace_ms: number;
}

const spec = JSON.parse(Buffer.from(process.argv[2] ?? '', 'base64').toString('utf8')) as Spec;
const status = createWriteStream('', { fd: 4 });
status.on('error', () => {});
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

const child = spawn(spec.argv[0] as string, spec.argv.slice(1), { cwd: spec.cwd, env: process.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
let stopping = false;
let exited = false;

const group = (signal: NodeJS.Signals) => {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    /* the group is already gone */
  }
};

const stop = () => {
  if (stopping || exited) return;
  stopping = true;
  group('SIGTERM');
  setTimeout(() => group('SIGKILL'), spec.grace_ms).unref();
};

const finish = (out: Record<string, unknown>) => {
  group('SIGKILL');
  status.end(`${JSON.stringify({ ...out, stopped: stopping })}\n`, () => process.exit(0));
};

child.stdin.on('error', () => {});
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.stderr.pipe(process.stderr);
child.on('spawn', () => status.write(`${JSON.stringify({ pid: child.pid })}\n`));
child.on('error', (err) => {
  exited = true;
  finish({ code: null, signal: null, error: err.message });
});
child.on('close', (code, signal) => {
  exited = true;
  finish({ code, signal });
});

const live = new Socket({ fd: 3, readable: true, writable: false });
live.on('data', () => {});
live.on('error', stop);
live.on('end', stop);
live.on('close', stop);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, stop);
