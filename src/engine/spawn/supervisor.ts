/*
 * The one supervisor between shadowcode and a process it starts (an approved
 * command, a coding CLI, a stdio MCP server). It starts the literal argv (no
 * shell; already wrapped in bwrap when sandboxed) as the leader of a new
 * process group, hands it fds 0-2 directly (no copying), and stays tied to its
 * owner by a lifeline socket on fd 3 that the owner never writes.
 *
 *   fd 4: JSON {argv, bwrap_at, cwd, env, grace_ms, sandboxed, cgroup?, seccomp?, error?}, then EOF
 *   (seccomp: the syscall filter's program, base64, which bwrap reads from a pipe of its own: fds.ts;
 *   cgroup: root's pids cgroup of the start, joined for the fork and left right after: bounds.ts;
 *   env: the child's, already built; this process itself runs with an empty one)
 *   nothing on fd 4 before EOF (the owner refused the start, or died) ─► exit, nothing started
 *   fd 0/1/2: the child's     fd 3: lifeline; we write {"pid"} once started, the status last
 *   the child gets fds 0-2 only: the lifeline and whatever we inherited are /dev/null in it,
 *   and bwrap closes them (fds.ts), so nothing inside can write a status line of its own
 *   lifeline EOF (owner closed it, or died, even by SIGKILL) ─► cleanup
 *   leader exits on its own ─► cleanup (nothing left in its group outlives it)
 *   cleanup: TERM ─► up to grace_ms while the group lives ─► KILL the group ─► wait
 *            for the leader ─► {code, signal, outcome, stopped, error, duration_ms} ─► exit
 *
 * The owner starts this process before it works out the command line and records the
 * start, and writes the spec once both are done: node's own start-up here (the longest
 * part of every start) overlaps that work instead of following it.
 *
 * Sandboxed, the leader is bwrap: TERM goes to what runs inside (every
 * descendant of bwrap; bwrap itself would die at once and take them down with
 * no chance to clean up), KILL to bwrap's group, whose PID namespace then ends
 * with everything in it. Terminal signals are ignored: only the lifeline (or
 * SIGKILL of this process, and then --die-with-parent) ends it.
 */
import { spawn } from 'node:child_process';
import { closeSync, readFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { joinCgroup, leaveCgroup } from './bounds.js';
import { sealed } from './fds.js';
import { endGroup } from './group.js';

/** Where the owner writes the spec (below: the lifeline on 3). */
const SPEC_FD = 4;

interface Spec {
  argv: string[];
  cwd: string;
  /** The child's environment, already built. */
  env: Record<string, string>;
  grace_ms: number;
  sandboxed: boolean;
  /** Where bwrap is in argv; null without a sandbox. */
  bwrap_at: number | null;
  /** The command cannot start (ENOENT, EACCES), found before bwrap would hide why: report it as a failed spawn. */
  error?: string;
  /** The syscall filter for bwrap, base64 (sandboxed only). */
  seccomp?: string;
  /** The start's pids cgroup (its cgroup.procs), root only: the child is forked in it. */
  cgroup?: string;
}

// Terminal signals are ignored from our first line (only the lifeline ends a supervisor), also
// while the spec is awaited: a Ctrl-C at the terminal reaches the owner's whole process group.
// Node's own start-up before this line is not covered: a Ctrl-C then ends the supervisor before
// it has read its spec, so nothing is started (the owner hears "ended without a status").
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGPIPE'] as const) process.on(s, () => {});
// Blocks until the owner has recorded the start (or given it up): nothing of ours runs before it anyway.
const sent = readFileSync(SPEC_FD);
closeSync(SPEC_FD);
// No spec: the start was refused after this process was started, or its owner is gone.
if (sent.length === 0) process.exit(0);
const spec = JSON.parse(sent.toString('utf8')) as Spec;
const lifeline = new Socket({ fd: 3, readable: true, writable: true, allowHalfOpen: true });
lifeline.on('error', () => {});

const started = Date.now();
let leader: { code: number | null; signal: string | null } | null = null;
let spawnError: string | null = spec.error ?? null;
let cleaning = false;
let stopped = false;
const passed = spec.error ? null : sealed(spec.argv, 'inherit', spec.sandboxed ? spec.bwrap_at : null, undefined, spec.sandboxed && spec.seccomp ? Buffer.from(spec.seccomp, 'base64') : null);
const child = passed ? startChild(passed) : null;
if (child && passed) passed.feed(child);
const leaderGone = new Promise<void>((resolve) => {
  if (!child) return resolve();
  child.on('spawn', () => lifeline.write(`${JSON.stringify({ pid: child.pid })}\n`));
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
if (!child) void cleanup('spawn_failed');

/** The child, forked in the start's cgroup where it has one (bounds.ts); a cgroup that cannot be joined starts nothing (spawn_failed). */
function startChild(p: NonNullable<typeof passed>) {
  if (spec.cgroup) {
    try {
      joinCgroup(spec.cgroup);
    } catch (err) {
      spawnError = `cannot join the sandbox's pids cgroup: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      return null;
    }
  }
  try {
    return spawn(p.argv[0] as string, p.argv.slice(1), { cwd: spec.cwd, env: spec.env, detached: true, stdio: p.stdio, shell: false });
  } finally {
    if (spec.cgroup) leaveCgroup(spec.cgroup);
  }
}

async function cleanup(why: string): Promise<void> {
  if (cleaning) return;
  cleaning = true;
  if (why === 'closed') stopped = true;
  let outcome: string = (await endGroup(child?.pid, spec.sandboxed, spec.grace_ms)) ?? 'exited';
  // The leader is waited for even after KILL, so the owner hears only of a finished cleanup.
  if (child?.pid) await leaderGone;
  if (spawnError) outcome = 'spawn_failed';
  const l = leader as { code: number | null; signal: string | null } | null;
  const status = { why, outcome, stopped, leader: l, code: l?.code ?? null, signal: l?.signal ?? null, error: spawnError, duration_ms: Date.now() - started };
  lifeline.end(`${JSON.stringify(status)}\n`, () => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
}

lifeline.on('data', () => {});
lifeline.on('end', () => void cleanup('closed'));
lifeline.on('close', () => void cleanup('closed'));
