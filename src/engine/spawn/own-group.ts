/*
 * A sandboxed start supervised by its owner. bwrap already does what the node
 * supervisor is there for, so none is started beside it (a node start-up per
 * command, about 80 ms of CPU and 40-90 ms before anything runs):
 *
 *   the owner dies, even by SIGKILL ─► --die-with-parent: bwrap and the sandbox's first
 *     process are killed, and with that first process (PID 1 of its namespace) everything in it
 *   a Ctrl-C at the owner's terminal ─► not bwrap's: it leads a process group of its own
 *     (and runs the command in a session of its own, --new-session)
 *   stop() ─► endGroup (group.ts): TERM inside, the grace period, KILL ─► outcome 'terminated' | 'killed'
 *   the group gone (bwrap exits only once its namespace is empty) and its output read
 *     ('close') ─► the status the supervisor would have written, from the kernel's exit status
 *
 * Unsandboxed starts keep the node supervisor (supervisor.ts): a plain process group
 * does not end with its owner.
 */
import type { ChildProcess } from 'node:child_process';
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

export function ownGroup(child: ChildProcess, graceMs: number): { pid: Promise<number | null>; status: Promise<SupervisorStatus>; stop: () => void } {
  const started = Date.now();
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
      ending = endGroup(child.pid, true, graceMs);
    },
  };
}
