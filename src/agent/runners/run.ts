/*
 * What every coding-CLI runner does around the CLI's own protocol.
 *
 *   gate 'runner:spawn' (trusted project) ─► executable found
 *   ─► servers for this run (at the granted hash, live catalog still equal to
 *      its pin) ─► private temp dir (0700) ─► the task's change watch opened
 *      (engine/change-watch.ts: a baseline in the store, naming the temp dir)
 *   ─► our MCP relay for the shared servers (relay-host.ts: the CLI's config names
 *      only it) ─► drive(run): spawn + the CLI's protocol; each command approval first
 *      records what the CLI changed so far
 *   ─► always: relay closed, temp dir removed ─► the watch observes: differences
 *      recorded as the job's checkpoints and changes ─► the CLI's protected state
 *      compared with before (state-guard.ts) ─► outcome
 *
 * The baseline is durable: if this process is SIGKILLed mid-run, whoever settles the
 * task records what the CLI changed so far and removes the temp dir (engine/owners.ts).
 *
 * The drivers (claude.ts, codex.ts, acp.ts) only translate: the CLI's events
 * into job events, its approval requests into ctx.requestApproval, its end into
 * an outcome. Cancellation (ctx.signal) stops the CLI's process group.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { CommandApproval } from '../../../gen/types/command-approval.js';
import type { Settings } from '../../../gen/types/settings.js';
import { type Cause, type ObservedChange, observeJob, type WatchOf } from '../../engine/change-watch.js';
import { commandContext } from '../../engine/command-context.js';
import { makeRunDir } from '../../engine/owners.js';
import { protectedCreatedEvent } from '../../engine/process.js';
import { ScError } from '../../errors.js';
import { enforce, type GateEnv } from '../../policy/gate.js';
import type { Policy } from '../../policy/load.js';
import type { Db } from '../../store/db.js';
import { runnerSpawnRequest, trustOf } from '../../policy/requests.js';
import type { SecretStore } from '../../store/secrets.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { type PathVerdict, pathVerdict } from '../../policy/protected-paths.js';
import type { TaskContext, TaskOutcome, Usage } from '../types.js';
import type { Relay, RelayEntry } from './relay-host.js';
import { type ServerChoice, serversForRun } from './servers.js';
import { guardState } from './state-guard.js';
import { guardedStatePaths, privateStatePaths, shownIn, stateFolders } from '../../engine/spawn/state-paths.js';
import { type GrantNote, sandboxMark } from '../../engine/spawn/index.js';
import { readUserFile } from '../../util/safe-read.js';
import { checkExecutable, type RunnerProcess, runnerEnv, spawnRunner } from './spawn.js';

export type RunnerProvider = 'claude-code' | 'codex' | 'acp';

export interface RunnerEntry {
  readonly id: string;
  readonly provider: RunnerProvider;
  readonly command: string;
  readonly args: readonly string[];
}

export interface RunnerDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretStore;
  readonly policy: Policy;
  readonly db: Db;
  readonly gateEnv: GateEnv;
  /** The profile's settings; `mcp.share_with_cli_agents: false` shares no servers. */
  readonly settings?: Settings;
}

export type Limits = Policy['limits']['runners'];

/** The policy tool_state key of each provider's usual command, so a CLI installed under another name keeps its login. */
const STATE_KEY: Record<RunnerProvider, string | null> = { 'claude-code': 'claude', codex: 'codex', acp: null };

/** What a driver gets for one run. */
export interface Run {
  readonly ctx: TaskContext;
  readonly entry: RunnerEntry;
  readonly limits: Limits;
  /** Plan, Review, or a read_only ceiling: the CLI runs in its no-edit mode and gets no write approvals. */
  readonly readOnly: boolean;
  readonly servers: ServerChoice;
  /**
   * What the CLI's MCP config lists: our relay, once per shared server (relay-host.ts).
   * Never a granted server's own command, URL or credential.
   */
  readonly relay: readonly RelayEntry[];
  /** How long one relayed call may take in the CLI's eyes: it waits for a person's approval. */
  readonly relayCallMs: number;
  /** The folders and files granted to the runner's sandbox (sandbox allow), as its command approvals name them. */
  readonly sandboxGrants: readonly GrantNote[];
  /** Writes a file (mode 0600) in the run's private temp dir, removed after the run. */
  tempFile(name: string, content: string): string;
  /** Which protected-path rule decides a write by the CLI to this project path (policy/protected-paths.json). */
  protect(path: string): PathVerdict;
  /**
   * A command's change-aware approval, as a native run_command's: argv and directory, every
   * file the task changed so far (what the CLI changed is recorded first), and which of them
   * the command runs.
   */
  /** A command's approval: the files changed so far, and the folders and files granted to the runner's sandbox (sandbox allow). */
  commandApproval(argv: readonly string[], cwd: string): CommandApproval & { grants?: GrantNote[] };
  /**
   * Starts the CLI with `command, ...fixed args, ...extra`, with the sanitised env plus `envNames`.
   * On cancellation its group is stopped at once, or with `abort: 'grace'` (a driver that tells
   * the CLI itself, as ACP's session/cancel does) only after the kill grace, so the CLI hears it.
   */
  launch(extra: readonly string[], envNames: readonly string[], onLine: (line: string) => void, abort?: 'stop' | 'grace'): RunnerProcess;
  /** Appends a job event, with long text fields cut to the event text limit. */
  emit(kind: string, body: Record<string, unknown>): void;
  clip(text: string): string;
  /** The events the native loop emits too, so every runner's job reads the same. */
  readonly events: {
    /** An assistant message: `model_response {step, stop, usage, text, tool_calls}`. */
    say(text: string, usage: Usage | null, calls: ReadonlyArray<{ id: string; name: string }>): void;
    /** `tool_call {step, id, name, arguments}` (arguments as JSON text). */
    toolCall(id: string, name: string, input: unknown): void;
    /** `tool_result {id, name, is_error, content}`. */
    toolResult(id: string, isError: boolean, content: string): void;
  };
}

/** A driver's report of how the CLI's run ended. */
export interface Driven {
  readonly ok: boolean;
  readonly summary: string | null;
  readonly usage?: Usage;
  readonly steps?: number;
  readonly failure?: string;
  /** The error code of a failure shadowcode itself raised (a required sandbox missing), when not the CLI's. */
  readonly code?: string;
}

function failed(code: string, message: string): TaskOutcome {
  return { state: 'failed', summary: null, reason: { code, message } };
}

export async function runCli(entry: RunnerEntry, deps: RunnerDeps, ctx: TaskContext, drive: (run: Run) => Promise<Driven>): Promise<TaskOutcome> {
  const limits = deps.policy.limits.runners;
  const readOnly = ctx.mode !== 'build' || ctx.ceiling === 'read_only';
  try {
    return await enforce(
      deps.gateEnv,
      runnerSpawnRequest(ctx, trustOf(deps.db, ctx.project), entry, !readOnly, { job_id: ctx.jobId, mode: ctx.mode, args: [...entry.args] }),
      (ticket) => runTicketed(ticket, entry, deps, ctx, limits, readOnly, drive),
    );
  } catch (err) {
    if (err instanceof ScError) return failed(err.code, err.message);
    return failed('SC_RUNNER_FAILED', (err as Error).message);
  }
}

async function runTicketed(ticket: GateTicket, entry: RunnerEntry, deps: RunnerDeps, ctx: TaskContext, limits: Limits, readOnly: boolean, drive: (run: Run) => Promise<Driven>): Promise<TaskOutcome> {
  assertTicket(ticket, 'runner:spawn');
  checkExecutable(entry.command);
  const offered = serversForRun(deps.db, ctx.project, deps.policy, deps.secrets, deps.settings, readOnly);
  // The catalog pin applies to CLIs too: a server whose live catalog differs from its pin is not passed.
  // Loaded here, not at start-up: only a run that shares servers needs the client.
  const refused = offered.shared.length ? await (await import('../../client/catalog-check.js')).catalogRefusals(deps, ctx, offered.shared.map((s) => s.definition)) : new Map<string, string>();
  const servers: ServerChoice = {
    shared: offered.shared.filter((s) => !refused.has(s.definition)),
    withheld: [...offered.withheld, ...[...refused].map(([definition, reason]) => ({ definition, reason }))],
  };
  const clip = (text: string) => (text.length > limits.event_text_chars ? `${text.slice(0, limits.event_text_chars)}… (${text.length - limits.event_text_chars} more characters)` : text);
  const emit = (kind: string, body: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) out[k] = typeof v === 'string' ? clip(v) : v;
    ctx.emit(kind, out);
  };
  let step = 0;
  const names = new Map<string, string>();
  const events: Run['events'] = {
    say: (text, usage, calls) => {
      step++;
      emit('model_response', { step, stop: calls.length ? 'tool_calls' : 'end', usage, text, tool_calls: calls.map((c) => ({ id: c.id, name: c.name })) });
    },
    toolCall: (id, name, input) => {
      names.set(id, name);
      emit('tool_call', { step, id, name, arguments: typeof input === 'string' ? input : JSON.stringify(input ?? {}) });
    },
    toolResult: (id, isError, content) => emit('tool_result', { id, name: names.get(id) ?? null, is_error: isError, content }),
  };
  emit('runner.servers', { shared: servers.shared.map((s) => ({ name: s.name, definition: s.definition, transport: s.transport })), withheld: servers.withheld });
  const stateKeys = [...new Set([basename(entry.command), ...(STATE_KEY[entry.provider] ? [STATE_KEY[entry.provider] as string] : [])])];
  // The same HOME the sandbox is built from: the runner's environment.
  const home = runnerEnv(deps.policy.environment, deps.env, []).HOME;
  const stateChanges = guardState(guardedStatePaths(deps.policy.sandbox, stateKeys, home, ctx.project, limits), limits);
  // Private files are copies (or read-only) in a sandbox, so only an unsandboxed run can change
  // them, or a place that shows them writable (a project that is the home, where a linked one
  // could be replaced by a rename).
  const privatePaths = privateStatePaths(deps.policy.sandbox, stateKeys, home);
  const privateChanges = guardState(privatePaths, limits);
  const privateShown = privatePaths.some((p) => shownIn(p, [ctx.project, ...stateFolders(deps.policy.sandbox, stateKeys, home)]));
  // Named by this process: after a SIGKILL the next open of the profile removes it (engine/owners.ts).
  const dir = makeRunDir();
  const job = { id: ctx.jobId, owner: ctx.owner, project: ctx.project, ceiling: ctx.ceiling };
  const watch: WatchOf = { id: ctx.jobId, jobId: ctx.jobId, project: ctx.project, runDir: dir };
  const cause: Cause = { via: entry.provider, why: `changed by ${entry.provider} runner ${entry.id}` };
  const seen: ObservedChange[] = [];
  const observe = () => {
    for (const c of observeJob(deps.gateEnv, job, watch, cause, { emit }).changes) seen.push(c);
  };
  try {
    const opened = observeJob(deps.gateEnv, job, watch, null, { emit });
    for (const reason of [opened.truncated, opened.unkept]) if (reason) emit('runner.snapshot_limited', { reason });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const copies = copyPrivateState(privatePaths, dir, limits.state_copy_bytes);
  const procs: RunnerProcess[] = [];
  // Protected paths a CLI process created where its sandbox could hold nothing, as each one ends.
  const created: string[] = [];
  let overtime = false;
  const wall = setTimeout(() => {
    overtime = true;
    for (const p of procs) p.cancel();
  }, limits.wall_time_ms);
  wall.unref();
  let driven: Driven;
  let relay: Relay | null = null;
  try {
    // Loaded only when there is something to relay, as the client above.
    if (servers.shared.length) relay = await (await import('./relay-host.js')).startRelay(ticket, deps, ctx, servers.shared, dir, limits.line_bytes);
    // What the runner's sandbox was given beyond the defaults: every command it runs inside has it too (its network is open anyway).
    const granted = (sandboxMark(deps.db, ctx.project, deps.policy, deps.env.HOME).grants ?? []).filter((g) => 'path' in g);
    const run: Run = {
      ctx, entry, limits, readOnly, servers, emit, clip, events, relay: relay?.entries ?? [], relayCallMs: limits.wall_time_ms, sandboxGrants: granted,
      protect: (path) => pathVerdict(deps.policy, ctx.project, path, 'write', dirname(deps.db.name)),
      commandApproval: (argv, cwd) => {
        observe();
        return { ...commandContext(deps.db, ctx.project, ctx.jobId, argv, cwd, deps.policy.limits.agent.read_bytes, deps.policy), ...(granted.length ? { grants: granted } : {}) };
      },
      tempFile: (name, content) => {
        const path = join(dir, name);
        writeFileSync(path, content, { mode: 0o600, flag: 'wx' });
        return path;
      },
      launch: (extra, envNames, onLine, abort = 'stop') => {
        const argv = [entry.command, ...entry.args, ...extra];
        const proc = spawnRunner(ticket, {
          argv, cwd: ctx.project, env: runnerEnv(deps.policy.environment, deps.env, envNames),
          graceMs: limits.kill_grace_ms, lineBytes: limits.line_bytes, outputBytes: limits.output_bytes, stderrBytes: limits.stderr_capture_bytes, policy: deps.policy, db: deps.db,
          runDir: dir, stateKeys, copies,
        }, onLine);
        procs.push(proc);
        void proc.done.then((e) => created.push(...(e.protected_created ?? [])));
        if (overtime) proc.cancel();
        const stop = abort === 'stop' ? () => proc.cancel() : () => setTimeout(() => proc.cancel(), limits.kill_grace_ms).unref();
        if (ctx.signal.aborted) proc.cancel();
        ctx.signal.addEventListener('abort', stop, { once: true });
        void proc.done.finally(() => ctx.signal.removeEventListener('abort', stop));
        void proc.pid.then((pid) => emit('runner.started', { provider: entry.provider, argv, pid, sandbox: proc.sandbox, label: proc.sandbox === 'none' ? 'unsandboxed' : 'sandboxed' }));
        return proc;
      },
    };
    driven = await drive(run);
  } catch (err) {
    driven = err instanceof ScError ? { ok: false, summary: null, failure: err.message, code: err.code } : { ok: false, summary: null, failure: (err as Error).message };
  } finally {
    clearTimeout(wall);
    await relay?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
  try {
    observe();
  } catch (err) {
    emit('changes_unobserved', { reason: (err as Error).message });
  }
  if (seen.length) emit('runner.files', { changed: seen.map((c) => ({ path: c.path, kind: c.kind, recorded: c.recorded, restorable: c.restorable })) });
  const protectedNew = protectedCreatedEvent([...new Set(created)]);
  if (protectedNew) emit('protected_created', protectedNew);
  const tampered = [...stateChanges(), ...(privateShown || procs.some((p) => p.sandbox === 'none') ? privateChanges() : [])];
  if (tampered.length) {
    emit('runner.state_changed', {
      changed: tampered,
      notice: `While this task ran, ${tampered.map((c) => c.path).join(', ')} changed (by the task or by anything else on this machine). These configure what ${basename(entry.command)} runs outside any sandbox when you start it yourself: check them before you do.`,
    });
  }
  if (ctx.signal.aborted) return { state: 'cancelled', summary: driven.summary, ...(driven.usage ? { usage: driven.usage } : {}) };
  if (overtime) return { ...failed('SC_LIMIT_REACHED', `the ${entry.provider} run passed its wall time of ${limits.wall_time_ms} ms and was stopped`), ...(driven.usage ? { usage: driven.usage } : {}) };
  if (!driven.ok) return { ...failed(driven.code ?? 'SC_RUNNER_FAILED', driven.failure ?? `${entry.provider} failed`), ...(driven.usage ? { usage: driven.usage } : {}) };
  return { state: 'succeeded', summary: driven.summary, ...(driven.usage ? { usage: driven.usage } : {}), ...(driven.steps !== undefined ? { steps: driven.steps } : {}) };
}

/**
 * A private copy, in the run's directory, of each tool_state_private file (Claude Code's
 * ~/.claude.json): the CLI writes its running state to the copy, which goes with the
 * directory, so nothing the task does reaches the settings it holds. A file that cannot
 * be read or is larger than the limit gets no copy: the sandbox shows it read-only.
 */
function copyPrivateState(paths: readonly string[], dir: string, cap: number): Map<string, string> {
  const copies = new Map<string, string>();
  paths.forEach((path, i) => {
    try {
      const { bytes } = readUserFile(path, { cap, kind: 'CLI state file' });
      const copy = join(dir, `state-${i}-${basename(path)}`);
      writeFileSync(copy, bytes, { mode: 0o600, flag: 'wx' });
      copies.set(path, copy);
    } catch {
      /* missing, unreadable or too large: no copy */
    }
  });
  return copies;
}

/** One line of what the CLI said on stderr, for a failure message. */
export function stderrTail(text: string): string {
  const lines = text.trim().split('\n').filter((l) => l.trim());
  return lines.slice(-3).join(' | ').slice(0, 500);
}
