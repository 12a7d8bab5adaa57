/*
 * A handle on one profile and one project, for a host that embeds shadowcode.
 *
 *   reads    status · jobs · events · approvals · review · why · catalog · auditVerify
 *            (the same data `--json` prints; the CLI commands' own code where one exists)
 *   actions  decide · cancel · rollback, through the gate as the CLI user, audited as
 *            `host:NAME`
 *   servers  serveStdio · serveHttp: the servers of `mcp serve`, each with its own owner
 *   watch    with onApproval, every approval that becomes pending is offered to the host
 *
 * The host is the person at the terminal here: it has the CLI user's authority and no
 * more, and every decision is a gate decision with an audit row.
 */
import { PassThrough } from 'node:stream';
import type { AuditReport } from '../../gen/types/audit-report.js';
import type { CatalogView } from '../../gen/types/catalog-view.js';
import type { Status } from '../../gen/types/status.js';
import { Ctx } from '../cli/context.js';
import { command as approvalsCommand } from '../cli/commands/approvals.js';
import { command as auditVerifyCommand } from '../cli/commands/audit-verify.js';
import { decide as decideCommand } from '../cli/commands/decide.js';
import { command as jobsCommand } from '../cli/commands/jobs.js';
import { cancelJob as cancelJobCommand } from '../cli/commands/jobs-cancel.js';
import { command as catalogCommand } from '../cli/commands/mcp.js';
import { command as reviewCommand } from '../cli/commands/review.js';
import { command as rollbackCommand } from '../cli/commands/rollback.js';
import { command as statusCommand } from '../cli/commands/status.js';
import { command as whyCommand } from '../cli/commands/why.js';
import type { JobRow } from '../engine/job-types.js';
import { getJob, jobEvents } from '../engine/jobs.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import type { Page } from '../util/cursor.js';
import { type Checked, checkOpenOptions } from './check.js';
import type { Approval, Decision, HttpServeOptions, OpenOptions, ServerHandle, StdioServeOptions } from './options.js';
import { type OwnedServer, serveHttp, serveStdio } from './serve.js';
import { ApprovalWatch } from './watch.js';

export interface JobEvent {
  readonly seq: number;
  readonly at: string;
  readonly kind: string;
  readonly body: unknown;
}

export class Shadowcode {
  private readonly ctx: Ctx;
  private readonly servers = new Set<OwnedServer>();
  private readonly watch: ApprovalWatch | undefined;
  private closed = false;

  /** @internal Use open(). */
  constructor(private readonly o: Checked) {
    const sink = new PassThrough();
    sink.resume();
    this.ctx = new Ctx(
      { stdin: new PassThrough(), stdout: sink, stderr: sink, env: o.env, cwd: o.workspace },
      { profile: o.profile, workspace: o.workspace, json: true, help: false, version: false },
      { policy: o.policy, owner: o.owner },
    );
    this.ctx.db(); // the profile is created or refused now, not at the first read
    if (o.onApproval) this.watch = new ApprovalWatch(this.ctx.db(), o.workspace, o.policy.limits.jobs.approval_poll_ms, o.onApproval, (id, d) => this.decide(id, d), o.log);
  }

  /** The project's real path. */
  get project(): string {
    return this.o.workspace;
  }

  /** The project's real path, under its older name. */
  get workspace(): string {
    return this.o.workspace;
  }

  /** The profile directory. */
  get profile(): string {
    return this.o.profile;
  }

  private live(): void {
    if (this.closed) throw new ScError('SC_USAGE', 'this shadowcode handle is closed');
  }

  /** A CLI command's own code, run for its data: one path for the terminal and the host. */
  private async data<T>(spec: { run: (ctx: Ctx, input: { options: Record<string, unknown>; args: string[] }) => Promise<{ data: unknown }> }, args: string[] = [], options: Record<string, unknown> = {}): Promise<T> {
    this.live();
    return (await spec.run(this.ctx, { options, args })).data as T;
  }

  /** `shadowcode status --json`. */
  status(): Promise<Status> {
    return this.data<Status>(statusCommand as never);
  }

  /** `shadowcode mcp --json`: definitions, grants, pinned catalogs, the audit of grant changes. */
  catalog(): Promise<CatalogView> {
    return this.data<CatalogView>(catalogCommand as never);
  }

  /** `shadowcode audit verify --json`; a broken chain is a report with ok: false, not an error. */
  auditVerify(): Promise<AuditReport> {
    return this.data<AuditReport>(auditVerifyCommand as never);
  }

  /** The project's pending approvals, whoever owns their job. */
  async approvals(): Promise<Approval[]> {
    return (await this.data<{ approvals: Approval[] }>(approvalsCommand as never)).approvals;
  }

  /** `shadowcode jobs --json`: the project's jobs and tasks of every owner, newest first, with a task's answer; a page at a time. */
  async jobs(cursor?: string): Promise<Page<JobRow & { answer: unknown }>> {
    const page = await this.data<{ jobs: Array<JobRow & { answer: unknown }>; next_cursor: string | null }>(jobsCommand as never, [], { limit: String(this.o.policy.limits.inspection.page_size_max), ...(cursor ? { cursor } : {}) });
    return { items: page.jobs, next_cursor: page.next_cursor };
  }

  /** A job's events from after `cursor` (the previous page's next_cursor). */
  events(jobId: string, cursor?: string): Page<JobEvent> {
    this.live();
    this.ownJob(jobId);
    return jobEvents(this.ctx.db(), jobId, { limit: this.o.policy.limits.jobs.event_page_size, ...(cursor ? { cursor } : {}) });
  }

  /** `shadowcode review TASK --json`: a task's changes as a unified diff per file, with its verification results. */
  review(taskId: string): Promise<Record<string, unknown>> {
    return this.data(reviewCommand as never, [taskId]);
  }

  /** `shadowcode why PATH --json`: the recorded change history of one project path (relative, or absolute inside the project). */
  why(path: string): Promise<{ path: string; changes: unknown[] }> {
    return this.data(whyCommand as never, [path], { limit: String(this.o.policy.limits.inspection.page_size_max) });
  }

  /** `shadowcode rollback --yes TASK --json`: restores every file a task changed, all or nothing (SC_ROLLBACK_CONFLICT names what changed since). */
  rollback(taskId: string): Promise<{ task_id: string; restored: string[] }> {
    return this.data(rollbackCommand as never, [taskId], { yes: true });
  }

  /** Approves or denies one pending approval of this project; the job holding it hears at once. */
  async decide(approvalId: string, decision: Decision): Promise<Approval> {
    this.live();
    if (decision !== 'approve' && decision !== 'deny') throw new ScError('SC_BAD_VALUE', `decision must be "approve" or "deny", got ${JSON.stringify(decision)}`);
    const out = await decideCommand(this.ctx, approvalId, decision === 'approve' ? 'approved' : 'denied');
    // A job of one of this handle's own servers (a temporary engine here) wakes now rather than at its next poll.
    for (const s of this.servers) await s.engine.notifyDecision(approvalId);
    return (out.data as { approval: Approval }).approval;
  }

  /**
   * Cancels a task or job of the project, whichever process runs it: `shadowcode jobs cancel`'s
   * own code (a request in the store that the running process acts on), waiting a bounded time.
   */
  async cancel(jobId: string): Promise<JobRow> {
    this.live();
    this.ownJob(jobId);
    return ((await cancelJobCommand(this.ctx, jobId)).data as { job: JobRow }).job;
  }

  /** Serves the project to one MCP client over a pair of streams, as `mcp serve` does over stdio. */
  async serveStdio(options: StdioServeOptions): Promise<ServerHandle> {
    this.live();
    return this.track(await serveStdio(this.ctx, this.o, options));
  }

  /** Starts the authenticated loopback HTTP gateway of `mcp serve --http`. */
  async serveHttp(options: HttpServeOptions): Promise<ServerHandle & { readonly url: string; readonly port: number }> {
    this.live();
    return this.track(await serveHttp(this.ctx, this.o, options));
  }

  private track<T extends OwnedServer>(s: T): T {
    this.servers.add(s);
    void s.closed.then(() => this.servers.delete(s));
    return s;
  }

  private ownJob(jobId: string): JobRow {
    const job = getJob(this.ctx.db(), jobId);
    if (!job || job.project !== this.o.workspace) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} in ${this.o.workspace}`);
    return job;
  }

  /** Closes every server (their owned jobs are cancelled, as on SIGTERM), stops the watch, closes the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watch?.stop();
    await Promise.all([...this.servers].map((s) => s.close()));
    this.ctx.close();
  }
}

/** Opens a profile and a project with the same checks as the CLI. */
export async function open(options: OpenOptions): Promise<Shadowcode> {
  return new Shadowcode(checkOpenOptions(options));
}

