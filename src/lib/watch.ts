/*
 * Offers each approval that becomes pending in the project to the host's onApproval.
 *
 *   every approval_poll_ms: pending approvals of the project (any owner, any engine)
 *     ─► not offered before ─► onApproval(approval) ─► 'approve' | 'deny' ─► decide
 *                                                  ─► undefined ─► stays pending for
 *                                                     the terminal, the console, other hosts
 *
 * The store is the meeting point: approvals of a shared engine, of this process's
 * servers and of other processes' temporary engines all land there. Each id is offered
 * once; a handler that throws leaves the approval pending and is logged.
 */
import { pendingApprovals } from '../engine/jobs.js';
import type { Db } from '../store/db.js';
import type { Approval, ApprovalHandler, Decision } from './options.js';

export class ApprovalWatch {
  private readonly offered = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly db: Db,
    private readonly project: string,
    everyMs: number,
    private readonly handler: ApprovalHandler,
    private readonly decide: (id: string, d: Decision) => Promise<Approval>,
    private readonly log: (line: string) => void,
  ) {
    this.timer = setInterval(() => void this.tick(), everyMs);
    this.timer.unref();
    void this.tick();
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const pending = pendingApprovals(this.db, { project: this.project });
      const now = new Set(pending.map((a) => a.id));
      for (const id of this.offered) if (!now.has(id)) this.offered.delete(id);
      for (const a of pending) {
        if (this.offered.has(a.id)) continue;
        this.offered.add(a.id);
        await this.offer(a);
      }
    } catch (err) {
      this.log(`shadowcode: approval watch: ${(err as Error).message}`);
    } finally {
      this.busy = false;
    }
  }

  private async offer(a: Approval): Promise<void> {
    let d: Decision | undefined;
    try {
      d = await this.handler(Object.freeze({ ...a }));
    } catch (err) {
      this.log(`shadowcode: onApproval threw for ${a.id}; it stays pending: ${(err as Error).message}`);
      return;
    }
    if (d === undefined) return;
    if (d !== 'approve' && d !== 'deny') {
      this.log(`shadowcode: onApproval returned ${JSON.stringify(d)} for ${a.id}; expected "approve", "deny" or undefined; it stays pending`);
      return;
    }
    try {
      await this.decide(a.id, d);
    } catch (err) {
      // Decided elsewhere first, or the job ended: nothing to do but say so.
      this.log(`shadowcode: ${d} ${a.id}: ${(err as Error).message}`);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
