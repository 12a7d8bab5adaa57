/*
 * Owned jobs: test commands and agent tasks.
 *
 *   test:  submit ─► row (queued, owner recorded first) ─► exact approval pending (with a task:
 *          the files it changed and which of them the command runs) ─► waiting_approval
 *          approved (here, or by the CLI in another process; pushed or polled) ─► queued for a
 *          run slot (jobs.concurrent_running) ─► change watch (the task's, else its own)
 *          ─► gate job:run ─► supervisor + process group ─► output events
 *          ─► what it changed recorded (on its task, else on itself) ─► succeeded | failed | cancelled
 *   agent: submitAgent ─► row (queued) ─► agent queue ─► a slot (agent.concurrent_tasks), and for
 *          a build task the project's one writer slot (checked in the store, so another process's
 *          writer counts) ─► TaskRunner.run(ctx) ─► events, approvals (waiting_approval while one
 *          is pending) ─► its change watch closed (a last look) ─► 'answer' event
 *          ─► succeeded | failed | cancelled
 *
 * Jobs live in the process whose connection owns them. When an owner ends, its
 * queued, waiting and running jobs are cancelled; others continue. Jobs left
 * behind by a process that died are marked cancelled the next time an engine
 * opens the profile: their queue died with it, so they never start.
 *
 * A cancel asked for in another process (`jobs cancel`, the console) is a row in the
 * store: while this process has live jobs it looks for such rows every
 * approval_poll_ms and cancels those jobs here (cancel-requests.ts); with none, no timer.
 *
 * This module is submission and the queues. The rest of the job layer:
 * job-events.ts (rows, states, the event log), approvals.ts (exact approvals and
 * who waits for them), owners.ts (owners and reaping), task-contract.ts (what a
 * task runner is given).
 */
import type { GateRequest } from '../../gen/types/gate-request.js';
import { asScError, decisionOf, ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import { redact, scrubText } from '../policy/redact.js';
import { jobRunRequest, trustOf } from '../policy/requests.js';
import { ScrubStream } from '../policy/scrub.js';
import { type Db, sql } from '../store/db.js';
import { tel } from '../telemetry/hooks.js';
import type { Level } from '../ticket.js';
import { newId } from '../util/ids.js';
import { type ApprovalRow, cancelPending, Decisions, getApproval } from './approvals.js';
import { cancelsFor } from './cancel-requests.js';
import { betweenCause, observeJob, openWatchOf, runningBackground, type WatchOf } from './change-watch.js';
import { commandContext } from './command-context.js';
import { childEnv } from './child-env.js';
import { ACTIVE, addEvent, getJob, type JobRow, now, setState } from './job-events.js';
import { alive, reapOrphans, writerOf } from './owners.js';
import { type CommandHandle, discardedEvent, protectedCreatedEvent, runCommand, sandboxBlockedEvent } from './process.js';
import { sandboxMark } from './spawn/index.js';
import type { ApprovalKind, ApprovalOutcome, TaskContext, TaskMode, TaskOutcome, TaskRunner } from './task-contract.js';

// The job layer's modules, re-exported so that readers keep one import for it.
export { type ApprovalRow, decideApproval, getApproval, pendingApprovals } from './approvals.js';
export { addEvent, getJob, jobAnswer, jobEvents, type JobRow, type JobState, listJobs } from './job-events.js';
export { reapOrphans } from './owners.js';

// A command approval says so when the command would run with the user's full access (no sandbox can be
// made here), and names every grant beyond the sandbox's defaults the command would run with.
export { sandboxMark } from './spawn/index.js';

export interface JobsConfig {
  readonly db: () => Db;
  readonly policy: Policy;
  readonly env: NodeJS.ProcessEnv;
  /**
   * False in the shared engine: every decider tells it through its socket (notifyDecision),
   * so nothing needs to poll. A temporary engine polls, since a CLI in another process
   * cannot reach it.
   */
  readonly poll?: boolean;
}

/** What an agent task is asked to do, as submitted. */
export interface AgentSpec {
  readonly project: string;
  readonly owner: string;
  readonly ceiling: Level;
  readonly prompt: string;
  readonly mode: TaskMode;
  /** A configured model id; null means the profile's default. */
  readonly modelId: string | null;
  /** Who asked, as the gate saw them. */
  readonly principal: GateRequest['principal'];
}

/** Builds the runner for one agent job when it starts (the model's credentials are resolved then, not at submit). */
export type AgentRunnerFactory = (spec: AgentSpec & { readonly jobId: string }) => TaskRunner;

interface AgentHandle {
  readonly done: Promise<unknown>;
  cancel(): void;
}

export class Jobs {
  private readonly queue: string[] = [];
  private readonly running = new Map<string, CommandHandle>();
  private readonly waiting = new Set<string>();
  private readonly cancelling = new Set<string>();
  /** Jobs being cancelled because another process asked (so a request is acted on once). */
  private readonly requested = new Set<string>();
  private poller: NodeJS.Timeout | undefined;
  private cancelWatch: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly agentQueue: Array<AgentSpec & { id: string }> = [];
  private readonly agents = new Map<string, AgentHandle>();
  private readonly endedOwners = new Set<string>();
  private agentRetry: NodeJS.Timeout | undefined;
  private runners: AgentRunnerFactory | undefined;
  private readonly decisions: Decisions;

  constructor(private readonly c: JobsConfig) {
    this.decisions = new Decisions(c.db, c.poll === false ? null : c.policy.limits.jobs.approval_poll_ms);
    reapOrphans(c.db(), c.policy);
  }

  private get limits() {
    return this.c.policy.limits;
  }

  private get gate() {
    return { policy: this.c.policy, db: this.c.db };
  }

  /**
   * Where a test job's changes go: its task's watch while the task has one open, else a
   * watch of its own for the run, recording on the task or, without one, on itself.
   */
  private testWatch(job: JobRow): { watch: WatchOf; own: boolean } {
    const db = this.c.db();
    if (job.task_id && openWatchOf(db, job.task_id)) return { watch: { id: job.task_id, jobId: job.task_id, project: job.project }, own: false };
    return { watch: { id: job.id, jobId: job.task_id ?? job.id, project: job.project }, own: true };
  }

  /** A test job: recorded with its owner, then waiting for approval of exactly this argv in this cwd. */
  submitTest(owner: string, project: string, argv: string[], ceiling: Level, taskId: string | null): { job: JobRow; approval: ApprovalRow } {
    if (this.closed) throw new ScError('SC_INTERNAL', 'the engine is closing');
    const db = this.c.db();
    const id = newId('job');
    const approvalId = newId('appr');
    // A run that verifies a task is approved like the task's own command: with what the task changed.
    let action: Record<string, unknown> = { argv, cwd: project };
    if (taskId) {
      const task = getJob(db, taskId);
      if (task && openWatchOf(db, taskId)) observeJob(this.gate, task, { id: taskId, jobId: taskId, project: task.project }, betweenCause(db, taskId));
      action = commandContext(db, project, taskId, argv, project, this.limits.agent.read_bytes, this.c.policy) as unknown as Record<string, unknown>;
    }
    db.transaction(() => {
      const used = (sql(db, 'SELECT count(*) AS n FROM jobs WHERE owner = ?').get(owner) as { n: number }).n;
      if (used >= this.limits.ownership.jobs_per_owner) throw new ScError('SC_LIMIT_REACHED', `this owner has submitted ${used} jobs, the most one connection may; reconnect to submit more`);
      const t = now();
      sql(db, "INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, task_id, argv, created_at, updated_at) VALUES (?, ?, 'test', ?, ?, 'queued', ?, ?, ?, ?, ?)").run(id, project, owner, ceiling, argv.join(' ').slice(0, 200), taskId, JSON.stringify(argv), t, t);
      addEvent(db, id, 'submitted', { argv, cwd: project, task_id: taskId });
      sql(db, "INSERT INTO approvals (id, job_id, kind, action, state, created_at) VALUES (?, ?, 'command', ?, 'pending', ?)").run(approvalId, id, JSON.stringify({ ...action, ...sandboxMark(db, project, this.c.policy, this.c.env.HOME) }), t);
      setState(db, id, 'waiting_approval');
    }).immediate();
    this.waiting.add(id);
    this.ensurePolling();
    this.watchCancels();
    const approval = getApproval(db, approvalId) as ApprovalRow;
    const t = tel();
    if (t) {
      t.jobOpened(id, 'test', { 'shadowcode.job.ceiling': ceiling, 'process.executable.name': argv[0]?.split('/').pop() });
      t.approvalOpened({ id: approvalId, jobId: id, kind: 'command', createdAt: approval.created_at });
    }
    return { job: getJob(db, id) as JobRow, approval };
  }

  /** Calls fn when approval `approvalId` is decided (pushed by notifyDecision). Returns the unsubscribe. */
  onDecision(approvalId: string, fn: () => void): () => void {
    return this.decisions.on(approvalId, fn);
  }

  /** An approval was decided in the store, here or by another process: act on it now. */
  notifyDecision(approvalId: string): void {
    this.decisions.notify(approvalId);
    this.sync();
  }

  /**
   * Re-reads every decision this engine waits for. The shared engine calls it whenever a
   * socket closes: a decider refused a socket while all were taken (SC_ENGINE_BUSY) has
   * already recorded its decision, and a freed socket is the first moment it could retry.
   */
  recheckDecisions(): void {
    this.decisions.recheckAll();
    this.sync();
  }

  /**
   * Waits until approval `approvalId` is no longer pending and returns its state. Woken by
   * notifyDecision; a temporary engine also re-reads the store every approval_poll_ms,
   * because a decision made by the CLI in another process is not pushed to it.
   */
  waitDecision(approvalId: string, signal?: AbortSignal): Promise<ApprovalRow['state']> {
    return this.decisions.wait(approvalId, signal);
  }

  private ensurePolling(): void {
    if (this.poller || this.closed || this.c.poll === false) return;
    this.poller = setInterval(() => this.sync(), this.limits.jobs.approval_poll_ms);
    this.poller.unref();
  }

  private liveIds(): string[] {
    return [...new Set([...this.queue, ...this.waiting, ...this.running.keys(), ...this.agentQueue.map((a) => a.id), ...this.agents.keys()])];
  }

  /** Looks for cancel requests made in other processes while this one has live jobs; stops when it has none. */
  private watchCancels(): void {
    if (this.cancelWatch || this.closed) return;
    this.cancelWatch = setInterval(() => {
      const ids = this.liveIds();
      if (ids.length === 0 || this.closed) {
        clearInterval(this.cancelWatch);
        this.cancelWatch = undefined;
        return;
      }
      let asked: string[];
      try {
        asked = cancelsFor(this.c.db(), ids);
      } catch {
        return; // the store is busy or closing: the next tick looks again
      }
      for (const id of asked) {
        if (this.requested.has(id)) continue;
        this.requested.add(id);
        void this.cancel(id)
          .catch((err: unknown) => process.emitWarning(`shadowcode: job ${id} could not be cancelled: ${(err as Error).message}`))
          .finally(() => this.requested.delete(id));
      }
    }, this.limits.jobs.approval_poll_ms);
    this.cancelWatch.unref();
  }

  /** Picks up decisions made anywhere (a connection here, or the CLI in another process). */
  sync(): void {
    const db = this.c.db();
    for (const id of [...this.waiting]) {
      const a = sql(db, "SELECT state FROM approvals WHERE job_id = ? AND kind = 'command' ORDER BY created_at DESC LIMIT 1").get(id) as { state: string } | undefined;
      if (!a || a.state === 'pending') continue;
      this.waiting.delete(id);
      const t = tel();
      if (t) {
        const row = sql(db, "SELECT id, state, decided_by, decided_at FROM approvals WHERE job_id = ? AND kind = 'command' ORDER BY created_at DESC LIMIT 1").get(id) as { id: string; state: string; decided_by: string | null; decided_at: string | null };
        t.approvalClosed({ id: row.id, state: row.state, decidedBy: row.decided_by, decidedAt: row.decided_at });
      }
      if (a.state === 'approved') {
        this.queue.push(id);
        if (getJob(db, id)?.state === 'waiting_approval') setState(db, id, 'queued');
        addEvent(db, id, 'queued', {});
      } else if (getJob(db, id)?.state === 'waiting_approval') setState(db, id, 'cancelled');
    }
    if (this.waiting.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.limits.jobs.concurrent_running && this.queue.length) this.start(this.queue.shift() as string);
  }

  private start(id: string): void {
    const db = this.c.db();
    const job = getJob(db, id);
    if (!job || job.state !== 'queued') return;
    const approval = sql(db, "SELECT action FROM approvals WHERE job_id = ? AND state = 'approved' ORDER BY decided_at DESC LIMIT 1").get(id) as { action: string } | undefined;
    // INVARIANT: what runs is exactly what was approved, read back from the approval itself.
    const action = approval ? (JSON.parse(approval.action) as { argv: string[]; cwd: string }) : undefined;
    if (!action) return setState(db, id, 'failed');
    const p = trustOf(db, job.project);
    const req = jobRunRequest(job, p, id, { argv: action.argv, cwd: action.cwd });
    const placeholder: CommandHandle = { done: Promise.resolve({ code: null, signal: null, cancelled: true, duration_ms: 0 }), cancel: () => this.cancelling.add(id) };
    this.running.set(id, placeholder);
    setState(db, id, 'running');
    const { watch, own } = this.testWatch(job);
    const cause = { via: 'test', why: `changed by test job ${id} ${JSON.stringify(action.argv)}` };
    const observed = (close: boolean) => {
      // The task ended while this run ran, and its watch with it: what changed since is not recorded.
      if (close && !own && !openWatchOf(db, watch.id)) {
        addEvent(db, id, 'changes_unobserved', { reason: `task ${watch.jobId} ended while this run ran; what the run changed after that is not recorded` });
        return;
      }
      try {
        const changes = observeJob(this.gate, job, watch, close ? cause : job.task_id ? betweenCause(db, job.task_id) : null, { close: close && own }).changes;
        // Recorded on the task: the test job says so in its own events too.
        if (close && changes.length && watch.jobId !== id) addEvent(db, id, 'files_changed', { via: 'test', why: cause.why, changed: changes, recorded_on: watch.jobId });
      } catch (err) {
        addEvent(db, id, 'changes_unobserved', { reason: (err as Error).message });
      }
    };
    observed(false);
    let captured = 0;
    // One scrubber per stream: a secret split across two reads of the pipe is still caught.
    const scrubbers = { stdout: new ScrubStream(), stderr: new ScrubStream() };
    const flush = () => {
      for (const stream of ['stdout', 'stderr'] as const) {
        const rest = scrubbers[stream].end();
        if (rest) addEvent(db, id, stream, { text: rest });
      }
    };
    const run = () => enforce({ policy: this.c.policy, db: this.c.db }, req, (ticket) => {
      const handle = runCommand(ticket, { argv: action.argv, cwd: action.cwd, env: childEnv(this.c.policy.environment, this.c.env), graceMs: this.limits.ownership.kill_grace_ms, project: p.path, network: p.network === true, policy: this.c.policy, db }, (stream, chunk) => {
        if (captured >= this.limits.jobs.output_bytes) return;
        const text = scrubbers[stream].push(chunk.subarray(0, this.limits.jobs.output_bytes - captured).toString('utf8'));
        captured += chunk.length;
        if (text) addEvent(db, id, stream, { text });
        if (captured >= this.limits.jobs.output_bytes) {
          flush();
          addEvent(db, id, 'output_truncated', { after_bytes: this.limits.jobs.output_bytes });
        }
      });
      this.running.set(id, handle);
      if (this.cancelling.has(id)) handle.cancel();
      return handle.done;
    });
    const t = tel();
    // In the job's span: the run decision and the process it starts are the job's children.
    (t ? t.inJob(id, run) : run())
      .then((r) => {
        flush();
        addEvent(db, id, 'exit', r);
        const created = protectedCreatedEvent(r.protected_created);
        if (created) addEvent(db, id, 'protected_created', created);
        const blocked = sandboxBlockedEvent(r.sandbox_blocked);
        if (blocked) addEvent(db, id, 'sandbox_blocked', blocked);
        const lost = discardedEvent(r.discarded, p.path);
        if (lost) addEvent(db, id, 'sandbox_discarded', lost);
        observed(true);
        tel()?.jobAnnotate(id, { 'process.exit.code': r.code ?? undefined, 'shadowcode.job.duration_ms': r.duration_ms });
        setState(db, id, r.cancelled || this.cancelling.has(id) ? 'cancelled' : r.code === 0 ? 'succeeded' : 'failed', { exit_code: r.code, duration_ms: r.duration_ms });
      })
      .catch((err: unknown) => {
        flush();
        addEvent(db, id, 'error', { message: (err as Error).message, code: (err as ScError).code, ...decisionOf(err) });
        observed(true);
        setState(db, id, 'failed');
      })
      .finally(() => {
        this.running.delete(id);
        this.cancelling.delete(id);
        this.pump();
      });
  }

  /** Cancels one job at once, wherever it is; a queued one does not wait for work ahead of it. */
  async cancel(id: string): Promise<JobRow> {
    const db = this.c.db();
    const job = getJob(db, id);
    if (!job) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)}`);
    if (job.kind === 'agent') return this.cancelAgent(job);
    const qi = this.queue.indexOf(id);
    if (qi >= 0) this.queue.splice(qi, 1);
    if (this.waiting.delete(id) || qi >= 0 || (['queued', 'waiting_approval'].includes(job.state) && !this.running.has(id))) {
      cancelPending(db, id, 'cancel');
      if (['queued', 'waiting_approval'].includes(getJob(db, id)?.state ?? '')) setState(db, id, 'cancelled');
    }
    const handle = this.running.get(id);
    if (handle) {
      this.cancelling.add(id);
      handle.cancel();
      await handle.done;
      while (this.running.has(id)) await new Promise((r) => setTimeout(r, 5));
    }
    return getJob(db, id) as JobRow;
  }

  /** An owner ended: cancel everything it still has, and wait until its processes are gone. */
  async cancelOwner(owner: string): Promise<void> {
    // From here on nothing of this owner starts, even a job submitted in the same instant.
    this.endedOwners.add(owner);
    const db = this.c.db();
    const ids = (sql(db, `SELECT id FROM jobs WHERE owner = ? AND state IN ${ACTIVE}`).all(owner) as Array<{ id: string }>).map((r) => r.id);
    await Promise.all(ids.map((id) => this.cancel(id)));
  }

  async close(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    if (this.cancelWatch) clearInterval(this.cancelWatch);
    this.cancelWatch = undefined;
    if (this.agentRetry) clearTimeout(this.agentRetry);
    this.agentRetry = undefined;
    const ids = [...new Set([...this.queue, ...this.waiting, ...this.running.keys(), ...this.agentQueue.map((a) => a.id), ...this.agents.keys()])];
    await Promise.all(ids.map((id) => this.cancel(id)));
    this.closed = true;
  }

  /** Sets how agent jobs get their runner (src/agent/task.ts); the engine itself knows no models. */
  useAgentRunners(factory: AgentRunnerFactory): void {
    this.runners ??= factory;
  }

  get hasAgentRunners(): boolean {
    return this.runners !== undefined;
  }

  /** Queues an agent task; it returns at once with the queued row. */
  submitAgent(spec: AgentSpec): JobRow {
    if (this.closed) throw new ScError('SC_INTERNAL', 'the engine is closing');
    if (this.endedOwners.has(spec.owner)) throw new ScError('SC_CANCELLED', 'this owner has ended; its tasks are cancelled');
    const l = this.limits.agent;
    if (spec.prompt.length > l.prompt_chars) throw new ScError('SC_LIMIT_REACHED', `a task prompt may be at most ${l.prompt_chars} characters`);
    const db = this.c.db();
    const id = newId('job');
    const prompt = scrubText(spec.prompt);
    db.transaction(() => {
      const used = (sql(db, 'SELECT count(*) AS n FROM jobs WHERE owner = ?').get(spec.owner) as { n: number }).n;
      if (used >= this.limits.ownership.jobs_per_owner) throw new ScError('SC_LIMIT_REACHED', `this owner has submitted ${used} jobs, the most one connection may; reconnect to submit more`);
      const t = now();
      const title = `${spec.mode}: ${prompt.replace(/\s+/g, ' ').trim()}`.slice(0, 200);
      sql(db, "INSERT INTO jobs (id, project, kind, owner, ceiling, state, title, created_at, updated_at) VALUES (?, ?, 'agent', ?, ?, 'queued', ?, ?, ?)").run(id, spec.project, spec.owner, spec.ceiling, title, t, t);
      addEvent(db, id, 'submitted', { mode: spec.mode, model: spec.modelId, ceiling: spec.ceiling, principal: spec.principal.kind, prompt: prompt.slice(0, l.event_text_chars) });
    }).immediate();
    this.agentQueue.push({ ...spec, prompt, id });
    tel()?.jobOpened(id, 'agent', { 'shadowcode.task.mode': spec.mode, 'shadowcode.job.ceiling': spec.ceiling, 'shadowcode.model.id': spec.modelId ?? undefined });
    this.watchCancels();
    // Started on the next turn of the event loop: the submitter gets its job id first.
    setImmediate(() => this.pumpAgents());
    return getJob(db, id) as JobRow;
  }

  private pumpAgents(): void {
    if (this.agentRetry) clearTimeout(this.agentRetry);
    this.agentRetry = undefined;
    const db = this.c.db();
    let blocked = false;
    for (let i = 0; !this.closed && i < this.agentQueue.length && this.agents.size < this.limits.agent.concurrent_tasks; ) {
      const spec = this.agentQueue[i] as AgentSpec & { id: string };
      const job = getJob(db, spec.id);
      if (!job || job.state !== 'queued') {
        this.agentQueue.splice(i, 1);
        continue;
      }
      if (this.endedOwners.has(spec.owner)) {
        this.agentQueue.splice(i, 1);
        setState(db, spec.id, 'cancelled');
        continue;
      }
      let started = false;
      db.transaction(() => {
        let holder = spec.mode === 'build' ? writerOf(db, spec.project, spec.id) : undefined;
        if (holder && !alive(holder.owner)) {
          reapOrphans(db, this.c.policy);
          holder = writerOf(db, spec.project, spec.id);
        }
        if (holder) return;
        setState(db, spec.id, 'running');
        started = true;
      }).immediate();
      if (!started) {
        blocked = true;
        i++;
        continue;
      }
      this.agentQueue.splice(i, 1);
      this.startAgent(spec);
    }
    // A writer slot held elsewhere (maybe by another process) frees without telling us: look again.
    if (blocked && !this.closed) {
      this.agentRetry = setTimeout(() => this.pumpAgents(), this.limits.agent.queue_poll_ms);
      this.agentRetry.unref();
    }
  }

  private startAgent(spec: AgentSpec & { id: string }): void {
    const db = this.c.db();
    const id = spec.id;
    const ctl = new AbortController();
    const l = this.limits;
    const ctx: TaskContext = {
      jobId: id, project: spec.project, mode: spec.mode, ceiling: spec.ceiling, owner: spec.owner, prompt: spec.prompt, signal: ctl.signal,
      emit: (kind, body) => addEvent(db, id, kind, redact(body, l.agent.event_text_chars)),
      requestApproval: (kind, action) => this.awaitApproval(id, kind, action, ctl.signal),
    };
    const run = async (): Promise<TaskOutcome> => {
      if (!this.runners) throw new ScError('SC_INTERNAL', 'no agent runtime is attached to this engine');
      const runner = this.runners({ ...spec, jobId: id });
      return runner.run(ctx);
    };
    const t = tel();
    const done = (t ? t.inJob(id, run) : run())
      .catch((err: unknown): TaskOutcome => {
        const e = asScError(err);
        return ctl.signal.aborted ? { state: 'cancelled', summary: null, reason: { code: 'SC_CANCELLED', message: 'the task was cancelled' } } : { state: 'failed', summary: null, reason: { code: e.code, message: e.message } };
      })
      .then((o) => {
        const state = ctl.signal.aborted && o.state !== 'succeeded' ? 'cancelled' : o.state;
        this.endWatch(spec, ctx);
        cancelPending(db, id, 'engine');
        tel()?.jobAnnotate(id, { 'gen_ai.usage.input_tokens': o.usage?.input_tokens, 'gen_ai.usage.output_tokens': o.usage?.output_tokens, 'shadowcode.task.steps': o.steps ?? undefined, 'error.type': o.state === 'failed' ? (o.reason?.code ?? 'task_failed') : undefined });
        addEvent(db, id, 'answer', redact({ state, summary: o.summary, reason: o.reason ?? null, usage: o.usage ?? null, steps: o.steps ?? null }, l.agent.summary_chars));
        setState(db, id, state);
      })
      .catch((err: unknown) => {
        // The store itself failed: nothing more can be recorded; keep the engine alive.
        process.emitWarning(`shadowcode: job ${id} could not record its end: ${(err as Error).message}`);
      })
      .finally(() => {
        this.agents.delete(id);
        this.pumpAgents();
      });
    this.agents.set(id, { done, cancel: () => ctl.abort(new ScError('SC_CANCELLED', 'the task was cancelled')) });
    addEvent(db, id, 'started', {});
  }

  /**
   * The task ended: a last look records what changed since the previous one (its background
   * processes), then its baseline goes. What a background process changes later is not recorded.
   */
  private endWatch(spec: AgentSpec & { id: string }, ctx: TaskContext): void {
    const db = this.c.db();
    try {
      observeJob(this.gate, { id: spec.id, owner: spec.owner, project: spec.project, ceiling: spec.ceiling }, { id: spec.id, jobId: spec.id, project: spec.project }, betweenCause(db, spec.id), { close: true, emit: ctx.emit });
    } catch (err) {
      ctx.emit('changes_unobserved', { reason: (err as Error).message });
    }
    const still = runningBackground(db, spec.id);
    if (still.length) ctx.emit('background_unwatched', { processes: still, notice: `background process ${still.map((b) => b.id).join(', ')} of this task still runs; what it changes from now on is not recorded as a change of the task` });
  }

  /** Records one exact pending approval and waits for its decision, made here or in any other process. */
  private async awaitApproval(jobId: string, kind: ApprovalKind, action: Record<string, unknown>, signal: AbortSignal): Promise<ApprovalOutcome> {
    const db = this.c.db();
    const id = newId('appr');
    if (signal.aborted) return 'cancelled';
    db.transaction(() => {
      sql(db, "INSERT INTO approvals (id, job_id, kind, action, state, created_at) VALUES (?, ?, ?, ?, 'pending', ?)").run(id, jobId, kind, JSON.stringify(action), now());
      addEvent(db, jobId, 'approval_requested', { approval_id: id, kind, action: redact(action, this.limits.agent.event_text_chars) });
      setState(db, jobId, 'waiting_approval');
    }).immediate();
    const t = tel();
    t?.approvalOpened({ id, jobId, kind, createdAt: (getApproval(db, id) as ApprovalRow).created_at });
    try {
      // Woken by notifyDecision (pushed in the shared engine); a temporary engine also polls the store.
      return (await this.waitDecision(id, signal)) as ApprovalOutcome;
    } catch (err) {
      if (signal.aborted) return 'cancelled';
      throw err;
    } finally {
      sql(db, "UPDATE approvals SET state = 'cancelled', decided_at = ?, decided_by = 'engine' WHERE id = ? AND state = 'pending'").run(now(), id);
      if (t) {
        const a = getApproval(db, id);
        if (a) t.approvalClosed({ id, state: a.state, decidedBy: a.decided_by, decidedAt: a.decided_at });
      }
      if (getJob(db, jobId)?.state === 'waiting_approval') setState(db, jobId, 'running');
    }
  }

  private async cancelAgent(job: JobRow): Promise<JobRow> {
    const db = this.c.db();
    const qi = this.agentQueue.findIndex((a) => a.id === job.id);
    if (qi >= 0) this.agentQueue.splice(qi, 1);
    const handle = this.agents.get(job.id);
    if (handle) {
      handle.cancel();
      await handle.done;
    } else if (job.state === 'queued') {
      // Queued here (or left queued by this process): it never reaches the model.
      setState(db, job.id, 'cancelled');
    }
    return getJob(db, job.id) as JobRow;
  }
}
