/*
 * A handle on one profile and one project, for a host that embeds shadowcode.
 *
 *   reads    status · jobs · events · approvals · review · why · catalog · auditVerify
 *            (the operations of src/ops the CLI commands call, so the same data `--json` prints)
 *   actions  decide · cancel · rollback, through the gate as the CLI user, audited as
 *            `host:NAME`
 *   servers  serveStdio · serveHttp: the servers of `mcp serve`, each with its own owner
 *   watch    with onApproval, every approval that becomes pending is offered to the host
 *
 * The host is the person at the terminal here: it has the CLI user's authority and no
 * more, and every decision is a gate decision with an audit row.
 */
import type { AuditReport } from '../../gen/types/audit-report.js';
import type { CatalogView } from '../../gen/types/catalog-view.js';
import type { Status } from '../../gen/types/status.js';
import type { JobRow } from '../engine/job-types.js';
import { getJob, jobEvents } from '../engine/jobs.js';
import { ScError } from '../errors.js';
import { decide, listApprovals } from '../ops/approvals.js';
import { verifyChain } from '../ops/audit.js';
import { showCatalog } from '../ops/catalog.js';
import { OpsSession } from '../ops/context.js';
import { review, rollback, why } from '../ops/history.js';
import { cancelJob, listJobPage } from '../ops/jobs.js';
import { status } from '../ops/status.js';
import { resolveProfile } from '../store/profile.js';
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
  private readonly ops: OpsSession;
  private readonly servers = new Set<OwnedServer>();
  private readonly watch: ApprovalWatch | undefined;
  private closed = false;

  /** @internal Use open(). */
  constructor(private readonly o: Checked) {
    // The profile as the CLI resolves --profile PATH: its real path (a part not made yet kept as written).
    this.ops = new OpsSession({ profileDir: resolveProfile(o.profile, o.env, o.workspace).dir, project: o.workspace, env: o.env, policy: o.policy, owner: o.owner });
    this.ops.db(); // the profile is created or refused now, not at the first read
    if (o.onApproval) this.watch = new ApprovalWatch(this.ops.db(), o.workspace, o.policy.limits.jobs.approval_poll_ms, o.onApproval, (id, d) => this.decide(id, d), o.log);
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

  /** `shadowcode status --json`. */
  async status(): Promise<Status> {
    this.live();
    return status(this.ops);
  }

  /** `shadowcode mcp --json`: definitions, grants, pinned catalogs, the audit of grant changes. */
  async catalog(): Promise<CatalogView> {
    this.live();
    return showCatalog(this.ops);
  }

  /** `shadowcode audit verify --json`; a broken chain is a report with ok: false, not an error. */
  async auditVerify(): Promise<AuditReport> {
    this.live();
    return verifyChain(this.ops);
  }

  /** The project's pending approvals, whoever owns their job. */
  async approvals(): Promise<Approval[]> {
    this.live();
    return listApprovals(this.ops) as Approval[];
  }

  /** `shadowcode jobs --json`: the project's jobs and tasks of every owner, newest first, with a task's answer; a page at a time. */
  async jobs(cursor?: string): Promise<Page<JobRow & { answer: unknown }>> {
    this.live();
    const page = await listJobPage(this.ops, { limit: this.o.policy.limits.inspection.page_size_max, ...(cursor ? { cursor } : {}) });
    return { items: page.jobs, next_cursor: page.next_cursor };
  }

  /** A job's events from after `cursor` (the previous page's next_cursor). */
  events(jobId: string, cursor?: string): Page<JobEvent> {
    this.live();
    this.ownJob(jobId);
    return jobEvents(this.ops.db(), jobId, { limit: this.o.policy.limits.jobs.event_page_size, ...(cursor ? { cursor } : {}) });
  }

  /** `shadowcode review TASK --json`: a task's changes as a unified diff per file, with its verification results. */
  async review(taskId: string): Promise<Record<string, unknown>> {
    this.live();
    return (await review(this.ops, taskId)) as unknown as Record<string, unknown>;
  }

  /** `shadowcode why PATH --json`: the recorded change history of one project path (relative, or absolute inside the project). */
  async why(path: string): Promise<{ path: string; changes: unknown[] }> {
    this.live();
    return why(this.ops, { path, limit: this.o.policy.limits.inspection.page_size_max });
  }

  /** `shadowcode rollback --yes TASK --json`: restores every file a task changed, all or nothing (SC_ROLLBACK_CONFLICT names what changed since). */
  async rollback(taskId: string): Promise<{ task_id: string; restored: string[] }> {
    this.live();
    return rollback(this.ops, taskId);
  }

  /** Approves or denies one pending approval of this project; the job holding it hears at once. */
  async decide(approvalId: string, decision: Decision): Promise<Approval> {
    this.live();
    if (decision !== 'approve' && decision !== 'deny') throw new ScError('SC_BAD_VALUE', `decision must be "approve" or "deny", got ${JSON.stringify(decision)}`);
    const r = await decide(this.ops, { approvalId, decision: decision === 'approve' ? 'approved' : 'denied' });
    // A job of one of this handle's own servers (a temporary engine here) wakes now rather than at its next poll.
    for (const s of this.servers) await s.engine.notifyDecision(approvalId);
    return r.approval as unknown as Approval;
  }

  /**
   * Cancels a task or job of the project, whichever process runs it: the operation `shadowcode jobs
   * cancel` runs (a request in the store that the running process acts on), waiting a bounded time.
   */
  async cancel(jobId: string): Promise<JobRow> {
    this.live();
    this.ownJob(jobId);
    return (await cancelJob(this.ops, jobId)).job;
  }

  /** Serves the project to one MCP client over a pair of streams, as `mcp serve` does over stdio. */
  async serveStdio(options: StdioServeOptions): Promise<ServerHandle> {
    this.live();
    return this.track(await serveStdio(this.ops, this.o, options));
  }

  /** Starts the authenticated loopback HTTP gateway of `mcp serve --http`. */
  async serveHttp(options: HttpServeOptions): Promise<ServerHandle & { readonly url: string; readonly port: number }> {
    this.live();
    return this.track(await serveHttp(this.ops, this.o, options));
  }

  private track<T extends OwnedServer>(s: T): T {
    this.servers.add(s);
    void s.closed.then(() => this.servers.delete(s));
    return s;
  }

  private ownJob(jobId: string): JobRow {
    const job = getJob(this.ops.db(), jobId);
    if (!job || job.project !== this.o.workspace) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} in ${this.o.workspace}`);
    return job;
  }

  /** Closes every server (their owned jobs are cancelled, as on SIGTERM), stops the watch, closes the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watch?.stop();
    await Promise.all([...this.servers].map((s) => s.close()));
    this.ops.close();
  }
}

/** Opens a profile and a project with the same checks as the CLI. */
export async function open(options: OpenOptions): Promise<Shadowcode> {
  return new Shadowcode(checkOpenOptions(options));
}

