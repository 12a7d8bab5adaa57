/*
 * The supervisor between shadowcode and one external stdio MCP server. It starts
 * the server's literal argv (no shell) as the leader of a new process group,
 * handing it our stdin/stdout/stderr pipes directly (no copying), and stays
 * attached to its owner by a lifeline socket on fd 3.
 *
 *   argv[2]: base64 JSON {argv, cwd, grace_ms}   env: the connection's env, already built
 *   fd 0/1/2: the server's (MCP frames in, frames out, stderr)
 *   fd 3: lifeline; EOF (owner closed it, or died, even by SIGKILL) ─► cleanup
 *   cleanup: TERM the group ─► up to grace_ms while the group lives ─► KILL the group
 *            ─► wait for the leader ─► one JSON status line on fd 3 ─► exit
 *
 * The leader also exiting on its own starts the same cleanup, so nothing left in
 * its group outlives the connection. Terminal signals are ignored here: only the
 * lifeline (or SIGKILL of this process) ends it, and then the group goes too.
 */
import { spawn } from 'node:child_process';
import { Socket } from 'node:net';

interface Spec {
  argv: string[];
  cwd: string;
  grace_ms: number;
}

const spec = JSON.parse(Buffer.from(process.argv[2] ?? '', 'base64').toString('utf8')) as Spec;
const lifeline = new Socket({ fd: 3, readable: true, writable: true, allowHalfOpen: true });
lifeline.on('error', () => {});
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGPIPE'] as const) process.on(s, () => {});

const child = spawn(spec.argv[0] as string, spec.argv.slice(1), { cwd: spec.cwd, env: process.env, detached: true, stdio: 'inherit', shell: false });
let leader: { code: number | null; signal: string | null } | null = null;
let spawnError: string | null = null;
let cleaning = false;
const leaderGone = new Promise<void>((resolve) => {
  child.on('exit', (code, signal) => {
    leader = { code, signal };
    resolve();
    void cleanup('leader_exited');
  });
  child.on('error', (err) => {
    spawnError = (err as NodeJS.ErrnoException).code ?? err.message;
    resolve();
    void cleanup('spawn_failed');
  });
});

function signalGroup(signal: NodeJS.Signals | 0): boolean {
  if (!child.pid) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false; // ESRCH: nothing of the group is left
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cleanup(why: string): Promise<void> {
  if (cleaning) return;
  cleaning = true;
  let outcome = 'exited';
  if (signalGroup('SIGTERM')) {
    outcome = 'terminated';
    const until = Date.now() + spec.grace_ms;
    while (Date.now() < until && signalGroup(0)) await sleep(10);
    if (signalGroup('SIGKILL')) outcome = 'killed';
  }
  // The leader is waited for even after KILL, so the owner hears only of a finished cleanup.
  if (child.pid) await leaderGone;
  if (spawnError) outcome = 'spawn_failed';
  lifeline.end(`${JSON.stringify({ why, outcome, leader, error: spawnError })}\n`, () => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
}

lifeline.on('data', () => {});
lifeline.on('end', () => void cleanup('closed'));
lifeline.on('close', () => void cleanup('closed'));
