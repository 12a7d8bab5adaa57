/*
 * A sandboxed start supervised by its owner. bwrap already does what the node
 * supervisor is there for, so none is started beside it (a node start-up per
 * command, about 80 ms of CPU and 40-90 ms before anything runs):
 *
 *   the owner dies, even by SIGKILL ─► --die-with-parent: bwrap and the sandbox's first
 *     process are killed, and with that first process (PID 1 of its namespace) everything in it
 *   both ties are armed only during the start (bwrap's after it made the sandbox, the first
 *     process's right before its exec): the command waits at the gate (sandbox.ts GATE) until
 *     bwrap reported its tie (--info-fd) and the first process said it runs (so its tie is armed
 *     too), and only then gets go; an owner that died before has closed the gate: nothing runs
 *   a Ctrl-C at the owner's terminal ─► not bwrap's: it leads a process group of its own
 *     (and runs the command in a session of its own, --new-session)
 *   stop() ─► the gate closed if still shut, endGroup (group.ts): TERM inside, the grace period,
 *     KILL ─► outcome 'terminated' | 'killed'
 *   the group gone (bwrap exits only once its namespace is empty) and its output read
 *     ('close') ─► the status the supervisor would have written, from the kernel's exit status
 *
 * Unsandboxed starts keep the node supervisor (supervisor.ts): a plain process group
 * does not end with its owner.
 */
import type { ChildProcess } from 'node:child_process';
import type { Duplex, Readable } from 'node:stream';
import { endGroup } from './group.js';

/** How a supervised start ended: the supervisor's last line, or the same built here from bwrap's exit. */
export interface SupervisorStatus {
  readonly why: string;
  readonly outcome: 'exited' | 'terminated' | 'killed' | 'spawn_failed' | 'unknown';
  /** The owner stopped it (a cancel, a close, the owner's death) before the process ended by itself. */
  readonly stopped: boolean;
  readonly code: number | null;
  readonly signal: string | null;
  readonly leader: { code: number | null; signal: string | null } | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

/** The gate's two descriptors in `child`: the socket its first process waits on, bwrap's --info-fd. */
export interface Gate {
  readonly socket: number;
  readonly info: number;
}

/** Says go once bwrap reported its tie and the first process said it runs; `shut()` closes it unopened. */
function openGate(child: ChildProcess, gate: Gate): { shut: () => void } {
  const socket = child.stdio[gate.socket] as Duplex | null;
  const info = child.stdio[gate.info] as Readable | null;
  let running = false;
  let tied = false;
  let said = false;
  let text = '';
  const go = () => {
    if (!running || !tied || said || !socket || socket.destroyed) return;
    said = true;
    socket.write('go\n');
  };
  socket?.on('error', () => {});
  info?.on('error', () => {});
  socket?.on('data', () => {
    running = true;
    go();
  });
  info?.on('data', (d: Buffer) => {
    if (text.length < 4096) text += d.toString('utf8');
    // bwrap writes this only after its prctl(PR_SET_PDEATHSIG): from here on it dies with us.
    if (!tied && text.includes('"child-pid"')) {
      tied = true;
      go();
    }
  });
  return { shut: () => void (said || socket?.destroy()) };
}

export function ownGroup(child: ChildProcess, graceMs: number, gate?: Gate): { pid: Promise<number | null>; status: Promise<SupervisorStatus>; stop: () => void } {
  const started = Date.now();
  const door = gate ? openGate(child, gate) : null;
  let exited = false;
  let failed: string | null = null;
  let ending: Promise<'terminated' | 'killed' | null> | null = null;
  const pid = new Promise<number | null>((resolve) => {
    child.once('spawn', () => resolve(child.pid ?? null));
    child.once('error', () => resolve(null));
  });
  child.once('exit', () => (exited = true));
  const status = new Promise<SupervisorStatus>((resolve) => {
    // Node reports a fork that failed (bwrap gone since it was found) as 'error', then 'close'.
    child.once('error', (err) => (failed ??= (err as NodeJS.ErrnoException).code ?? err.message));
    child.once('close', (code, signal) => {
      void (async () => {
        const duration = Date.now() - started;
        if (failed !== null) return resolve({ why: 'spawn_failed', outcome: 'spawn_failed', stopped: false, code: null, signal: null, leader: null, error: failed, duration_ms: duration });
        const ended = ending ? await ending : null;
        const leader = { code, signal };
        resolve({ why: ending ? 'closed' : 'leader_exited', outcome: ended ?? 'exited', stopped: ending !== null, leader, code, signal, error: null, duration_ms: duration });
      })();
    });
  });
  return {
    pid,
    status,
    // Idempotent, and nothing once the group has ended by itself: as the supervisor, whose lifeline then has no one left to stop.
    stop: () => {
      if (ending || exited || failed !== null || child.pid === undefined) return;
      // Not started yet: it never will be (the gate's read ends), and nothing waits out the grace for it.
      door?.shut();
      ending = endGroup(child.pid, true, graceMs);
    },
  };
}
