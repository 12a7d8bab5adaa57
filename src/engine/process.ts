/*
 * Runs an approved command supervised by the spawn point, in the
 * project directory, with a literal argv and the sanitised environment, in the
 * sandbox (network only when the project has it).
 *
 *   runCommand(ticket, spec) ─► spawn/supervise ─► [bwrap …] command (own process group)
 *   cancel() ends the lifeline ─► TERM, grace, KILL to the group
 *   ─► the result, with the protected paths it created where nothing could be held, and when it
 *      failed on a path the sandbox hid or showed read-only, which and how to grant it (explain.ts)
 */
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { blockText, type Discarded, discardedNotice, SCAN_INCOMPLETE, type SandboxBlock, type SandboxLevel, supervise } from './spawn/index.js';

export interface CommandSpec {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly graceMs: number;
  /** The project the command may write, and whether it may reach the network. */
  readonly project: string;
  readonly network: boolean;
  readonly policy: Policy;
  readonly db: Db;
}

export interface CommandResult {
  readonly code: number | null;
  readonly signal: string | null;
  readonly cancelled: boolean;
  readonly duration_ms: number;
  readonly error?: string;
  /** The sandbox the command ran in; absent when it never started. */
  readonly sandbox?: SandboxLevel;
  /** Protected paths the command created where the sandbox could hold nothing (a nested repository, a host config below the top). */
  readonly protected_created?: readonly string[];
  /** It failed on paths the sandbox hid or showed read-only: each, in words, with the `sandbox allow` that would show it. */
  readonly sandbox_blocked?: readonly SandboxBlock[];
  /** What it wrote in its private home and /tmp, discarded with the sandbox. */
  readonly discarded?: Discarded;
}

/** The job event that warns of protected paths a command created, or null when it created none. */
export function protectedCreatedEvent(list: readonly string[] | undefined): { paths: string[]; incomplete?: true; notice: string } | null {
  if (!list || list.length === 0) return null;
  const incomplete = list.includes(SCAN_INCOMPLETE);
  const paths = [...new Set(list.filter((p) => p !== SCAN_INCOMPLETE))];
  const made = paths.length ? `The command created ${paths.length === 1 ? 'a protected path' : 'protected paths'} that git or a coding host may load and run later: ${paths.join(', ')}. ` : '';
  const more = incomplete ? 'The command left more in the project than the check for protected paths reads (limits.protection scan_entries and scan_depth), so a repository or host configuration it made may not be listed. ' : '';
  return {
    paths,
    ...(incomplete ? { incomplete: true as const } : {}),
    notice: `${made}${more}Check ${paths.length === 1 && !incomplete ? 'it' : incomplete ? 'the project' : 'them'} before you use git or open a host there.`,
  };
}

/** The job event that explains a failure the sandbox caused, or null when it caused none. */
export function sandboxBlockedEvent(blocks: readonly SandboxBlock[] | undefined): { blocks: SandboxBlock[]; notice: string } | null {
  if (!blocks || blocks.length === 0) return null;
  return { blocks: [...blocks], notice: blockText(blocks) };
}

/** The job event that tells a command what it wrote where nothing is kept, or null when it wrote nothing there. */
export function discardedEvent(d: Discarded | undefined, project: string | null): (Discarded & { notice: string }) | null {
  return d ? { ...d, notice: `The command ${discardedNotice(d, project)}.` } : null;
}

export interface CommandHandle {
  readonly done: Promise<CommandResult>;
  cancel(): void;
}

export function runCommand(ticket: GateTicket, spec: CommandSpec, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void): CommandHandle {
  assertTicket(ticket, 'job:run');
  const s = supervise(ticket, {
    kind: 'command', argv: spec.argv, cwd: spec.cwd, env: spec.env, graceMs: spec.graceMs, stdin: 'ignore',
    confine: { project: spec.project, network: spec.network }, trustedArgv: false, policy: spec.policy, db: spec.db,
  });
  // The end of what it said, both streams as they came: what explains a failure is near the end.
  const cap = spec.policy.limits.sandbox.explain_bytes;
  let tail = '';
  const keep = (c: Buffer) => {
    tail += c.toString('utf8');
    if (tail.length > 2 * cap) tail = tail.slice(-cap);
  };
  s.process.stdout?.on('data', (c: Buffer) => (keep(c), onOutput('stdout', c)));
  s.process.stderr?.on('data', (c: Buffer) => (keep(c), onOutput('stderr', c)));
  const done = Promise.all([s.status, s.created, s.discarded]).then(([st, created, discarded]): CommandResult => {
    const blocked = st.stopped || st.error ? [] : s.explain(tail, st.code);
    return {
      code: st.code,
      signal: st.signal,
      cancelled: st.stopped,
      duration_ms: st.duration_ms,
      sandbox: s.level,
      ...(st.error ? { error: st.error } : {}),
      ...(created.length ? { protected_created: created } : {}),
      ...(blocked.length ? { sandbox_blocked: blocked } : {}),
      ...(discarded ? { discarded } : {}),
    };
  });
  return { done, cancel: () => s.stop() };
}
