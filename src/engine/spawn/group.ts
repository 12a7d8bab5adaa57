/*
 * Ending a started process group the one way, whoever holds it: the node
 * supervisor (an unsandboxed start) or the owner itself (a sandboxed start,
 * where bwrap is the leader: sandboxed.ts).
 *
 *   endGroup(leader, sandboxed, graceMs)
 *     nothing left in the group ─► null
 *     sandboxed ─► TERM to every descendant of bwrap (what runs inside), not to bwrap:
 *                  it would die at once and take them down with no chance to clean up
 *     otherwise ─► TERM to the group
 *     ─► up to graceMs while the group lives ─► KILL the group
 *     ─► 'terminated' (gone within the grace) | 'killed'
 *
 * The caller waits for the leader itself afterwards: a KILL is sent, not yet reaped.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Signals the group `leader` leads; false when nothing of it is left (ESRCH). */
export function signalGroup(leader: number | undefined, signal: NodeJS.Signals | 0): boolean {
  if (!leader) return false;
  try {
    process.kill(-leader, signal);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `root`, from /proc (the host's view sees into the sandbox's PID namespace). */
export function descendants(root: number): number[] {
  const parent = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parent.get(ppid) ?? [];
      list.push(Number(name));
      parent.set(ppid, list);
    } catch {
      /* gone meanwhile */
    }
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) for (const c of parent.get(stack.pop() as number) ?? []) out.push(c), stack.push(c);
  return out;
}

/** TERM to what the group runs; false when there was nothing left to end. */
function terminate(leader: number | undefined, sandboxed: boolean): boolean {
  if (!sandboxed) return signalGroup(leader, 'SIGTERM');
  if (!leader || !signalGroup(leader, 0)) return false;
  for (const pid of descendants(leader)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** TERM, the grace period while the group lives, then KILL; null when nothing was left to end. */
export async function endGroup(leader: number | undefined, sandboxed: boolean, graceMs: number): Promise<'terminated' | 'killed' | null> {
  if (!terminate(leader, sandboxed)) return null;
  const until = Date.now() + graceMs;
  while (Date.now() < until && signalGroup(leader, 0)) await sleep(10);
  return signalGroup(leader, 'SIGKILL') ? 'killed' : 'terminated';
}
