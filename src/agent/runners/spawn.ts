/*
 * Starts a coding CLI for one task: the literal executable and arguments (no
 * shell), in the project's real path, with the sanitised environment plus only
 * the names the runner needs, as the leader of its own process group supervised by
 * the spawn point, in the OS sandbox where one can be made.
 *
 *   spawnRunner(ticket 'runner:spawn', spec)
 *     ─► spawn/supervise (audit row: kind runner, level, network open to reach the model)
 *        ─► bwrap: the project (protected paths read-only), the CLI's own state
 *           (policy tool_state, read-write, where it exists; tool_state_read_only
 *           read-only; tool_state_private as a copy in the run dir), its install and the
 *           relay program with its node (read-only), the run dir (relay socket,
 *           MCP config) read-write; home, profile and /tmp private ─► CLI (own group)
 *     stdout ─► bounded JSON lines ─► onLine     stderr ─► bounded capture
 *     cancel() ─► TERM, grace, KILL to the group   our death ─► the sandbox ends with us
 *     (bwrap's --die-with-parent; unsandboxed, the node supervisor's cleanup)
 *
 * A line longer than the line cap, or more stdout than the output cap, stops
 * the CLI and fails the run: nothing it prints can grow without bound here.
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { Writable } from 'node:stream';
import type { Environment } from '../../../gen/types/environment.js';
import { childEnv } from '../../engine/child-env.js';
import { type SandboxLevel, supervise } from '../../engine/spawn/index.js';
import { installRoot } from '../../engine/spawn/sandbox.js';
import { packageRoot } from '../../util/paths.js';
import type { Policy } from '../../policy/load.js';
import type { Db } from '../../store/db.js';
import { ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';

export interface RunnerSpec {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly graceMs: number;
  readonly lineBytes: number;
  readonly outputBytes: number;
  readonly stderrBytes: number;
  readonly policy: Policy;
  readonly db: Db;
  /** The run's private directory (relay socket, MCP config): bound read-write at the same path. */
  readonly runDir: string;
  /** The policy tool_state keys of this CLI (its own name, and its provider's usual one). */
  readonly stateKeys: readonly string[];
  /** Private copies of its tool_state_private files, by the file's path with ~/ expanded (run.ts makes them in the run dir). */
  readonly copies?: ReadonlyMap<string, string>;
}

export interface RunnerExit {
  readonly code: number | null;
  readonly signal: string | null;
  /** The group was stopped by us (cancel, owner death, a broken limit), not by the CLI ending. */
  readonly stopped: boolean;
  readonly error?: string;
  /** Why we stopped it, when a limit did. */
  readonly overflow?: string;
  readonly stderr: string;
  /** Protected paths the CLI or its commands created where the sandbox could hold nothing (spawn/index.ts). */
  readonly protected_created?: readonly string[];
}

export interface RunnerProcess {
  /** The sandbox the CLI runs in. */
  readonly sandbox: SandboxLevel;
  /** The CLI's pid (the leader of its process group), once it started. */
  readonly pid: Promise<number | null>;
  readonly done: Promise<RunnerExit>;
  /** Writes one JSON line to the CLI's stdin. */
  send(message: unknown): void;
  /** Writes text as is to the CLI's stdin. */
  write(text: string): void;
  /** Closes the CLI's stdin (end of input); the CLI decides when to exit. */
  endInput(): void;
  /** Stops the CLI's group: TERM, the grace period, KILL. */
  cancel(): void;
}

/** The sanitised environment plus the extra names a runner needs, where shadowcode's own environment has them; a denied name never passes. */
export function runnerEnv(policy: Environment, env: NodeJS.ProcessEnv, extra: readonly string[]): Record<string, string> {
  const out = childEnv(policy, env);
  for (const name of extra) {
    const value = env[name];
    const denied = policy.deny.includes(name) || policy.deny_substrings.some((s) => name.toUpperCase().includes(s));
    if (value !== undefined && value !== '' && !denied) out[name] = value;
  }
  return out;
}

/** The executable must be an absolute path to a regular file we may execute. */
export function checkExecutable(command: string): void {
  if (!isAbsolute(command)) throw new ScError('SC_RUNNER_NOT_FOUND', `runner command ${JSON.stringify(command)} must be an absolute path`);
  try {
    if (!statSync(command).isFile()) throw new Error('not a regular file');
    accessSync(command, constants.X_OK);
  } catch (err) {
    throw new ScError('SC_RUNNER_NOT_FOUND', `runner command ${command} cannot be run: ${(err as Error).message}`);
  }
}

/** What the CLI needs to start our relay (relay-host.ts names `node dist/mcp-relay.js`): that program and the node that runs it. */
function relayRoots(home: string | undefined): string[] {
  const node = process.execPath;
  let real = node;
  try {
    real = realpathSync(node);
  } catch {
    /* as given */
  }
  return [join(packageRoot(), 'dist'), installRoot(node, home), installRoot(real, home)];
}

export function spawnRunner(ticket: GateTicket, spec: RunnerSpec, onLine: (line: string) => void): RunnerProcess {
  assertTicket(ticket, 'runner:spawn');
  checkExecutable(spec.argv[0] as string);
  const s = supervise(ticket, {
    kind: 'runner', argv: spec.argv, cwd: spec.cwd, env: spec.env, graceMs: spec.graceMs, stdin: 'pipe',
    // The network is open: a coding CLI must reach its model (the audit row says why).
    confine: { project: spec.cwd, network: true, networkWhy: 'a coding CLI reaches its model', readable: relayRoots(spec.env.HOME), writable: [spec.runDir], stateKeys: spec.stateKeys, ...(spec.copies ? { copies: spec.copies } : {}) },
    trustedArgv: true, policy: spec.policy, db: spec.db,
  });
  const sup = s.process;
  const input = sup.stdin as Writable;
  input.on('error', () => {});
  let overflow: string | undefined;
  let stopped = false;
  const cancel = () => {
    if (stopped) return;
    stopped = true;
    s.stop();
  };

  let pending: Buffer = Buffer.alloc(0);
  let total = 0;
  sup.stdout?.on('data', (chunk: Buffer) => {
    if (overflow) return;
    total += chunk.length;
    if (total > spec.outputBytes) {
      overflow = `the CLI printed more than ${spec.outputBytes} bytes`;
      return cancel();
    }
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl: number;
    while ((nl = pending.indexOf(10)) >= 0) {
      const line = pending.subarray(0, nl).toString('utf8');
      pending = pending.subarray(nl + 1);
      if (line.trim()) {
        try {
          onLine(line);
        } catch (err) {
          // A line we cannot record is a run we cannot account for: stop it.
          overflow = `a CLI event could not be handled: ${(err as Error).message}`;
          cancel();
        }
      }
      if (overflow) return;
    }
    if (pending.length > spec.lineBytes) {
      overflow = `the CLI printed a line longer than ${spec.lineBytes} bytes`;
      cancel();
    }
  });
  let stderr = '';
  sup.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < spec.stderrBytes) stderr += chunk.toString('utf8').slice(0, spec.stderrBytes - stderr.length);
  });

  const done = Promise.all([s.status, s.created]).then(([st, created]): RunnerExit => {
    if (pending.length && !overflow && pending.toString('utf8').trim()) {
      try {
        onLine(pending.toString('utf8'));
      } catch (err) {
        overflow = `a CLI event could not be handled: ${(err as Error).message}`;
      }
    }
    s.stop();
    return { code: st.code, signal: st.signal, stopped: stopped || st.stopped, stderr, ...(st.error ? { error: st.error } : {}), ...(overflow ? { overflow } : {}), ...(created.length ? { protected_created: created } : {}) };
  });
  return {
    sandbox: s.level,
    pid: s.pid,
    done,
    send: (message) => {
      if (!input.writableEnded) input.write(`${JSON.stringify(message)}\n`);
    },
    write: (text) => {
      if (!input.writableEnded) input.write(text);
    },
    endInput: () => input.end(),
    cancel,
  };
}
