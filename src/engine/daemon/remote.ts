/*
 * The shared engine as a server process sees it: jobs go to the engine over
 * ownership sockets, one per owner, opened by that owner's first job.
 *
 *   submit(owner, spec) ─► ownership socket (first job: open, register, ready)
 *                      ─► submit frame ─► reply {job, approval} within 30 s
 *   release(owner)     ─► close frame ─► engine cancels and reaps ─► ack ─► socket closed
 *   a killed process   ─► the kernel closes the socket ─► the engine cancels the same way
 *
 * Control requests (decisions, status) use a short-lived socket of their own.
 *
 * With telemetry on, submit, detach and decision frames carry the W3C traceparent of the span
 * that asked (a tools/call, a CLI command's): the engine's spans for them (its gate decision,
 * the job, its approvals and spawns) join the caller's trace.
 */
import { existsSync } from 'node:fs';
import { ScError } from '../../errors.js';
import { VERSION } from '../../version.js';
import { enforce, type GateEnv } from '../../policy/gate.js';
import { type Asker, engineConnectRequest } from '../../policy/requests.js';
import { tel } from '../../telemetry/hooks.js';
import type { JobRow } from '../job-events.js';
import type { JobSpec, OwnerSpec, Submitted } from '../engine-submit.js';
import { type EngineInfo, EngineLink, type OwnerHello } from './client.js';
import { type EngineFiles, engineFiles } from './files.js';

export type { Asker };

/** The active span's trace context, for a frame (nothing while telemetry is off). */
function traceContext(engine: EngineInfo): { traceparent?: string; tracestate?: string } {
  const t = tel();
  // An engine of an earlier release (still running across an upgrade) refuses frames with fields it does not know.
  if (!t || engine.version !== VERSION) return {};
  const carrier: Record<string, string> = {};
  t.inject(carrier);
  return carrier;
}

/** Opens a socket to the engine through the gate (action engine:connect). */
export function openLink(gate: GateEnv, files: EngineFiles, role: 'control' | 'owner', who: Asker, owner?: OwnerHello): Promise<EngineLink> {
  return enforce(
    gate,
    engineConnectRequest(who, files.sock, role),
    (t) => EngineLink.open(t, files, gate.policy.limits, role, owner),
  );
}

/** One control request on a socket of its own. */
export async function controlRequest(gate: GateEnv, files: EngineFiles, who: Asker, frame: Parameters<EngineLink['request']>[0]): Promise<{ engine: EngineInfo; data: Record<string, unknown> }> {
  const link = await openLink(gate, files, 'control', who);
  try {
    return { engine: link.engine, data: await link.request(frame, gate.policy.limits.engine.control_deadline_ms) };
  } finally {
    link.destroy();
  }
}

export class RemoteEngine {
  private readonly owners = new Map<string, Promise<EngineLink>>();
  private lostHandler: (() => void) | undefined;

  private constructor(private readonly gate: GateEnv, readonly files: EngineFiles, readonly info: EngineInfo, private readonly who: Asker) {}

  /** The running engine of the profile, or null. A socket that fails the peer check is an error, not a fallback. */
  static async find(gate: GateEnv, profileDir: string, who: Asker): Promise<RemoteEngine | null> {
    const files = engineFiles(profileDir);
    if (!existsSync(files.sock)) return null;
    try {
      const link = await openLink(gate, files, 'control', who);
      link.destroy();
      return new RemoteEngine(gate, files, link.engine, who);
    } catch (err) {
      if ((err as ScError).code === 'SC_ENGINE_NOT_RUNNING') return null;
      throw err;
    }
  }

  private deadline(): number {
    return this.gate.policy.limits.ownership.response_deadline_ms;
  }

  /** The owner's socket; opened (and the owner registered) before its first job is sent. */
  private ownerLink(owner: OwnerSpec): Promise<EngineLink> {
    const have = this.owners.get(owner.label);
    if (have) {
      return have.then(
        (l) => (l.closed ? this.reopen(owner) : l),
        () => this.reopen(owner),
      );
    }
    return this.reopen(owner);
  }

  private reopen(owner: OwnerSpec): Promise<EngineLink> {
    const p = openLink(this.gate, this.files, 'owner', { kind: owner.transport, owner: owner.label }, { label: owner.label, transport: owner.transport, project: owner.project });
    this.owners.set(owner.label, p);
    p.then(
      // An ownership socket that closes while still ours (not released): the engine may have died.
      (link) => void link.whenClosed().then(() => this.owners.get(owner.label) === p && this.lostHandler?.()),
      () => this.owners.get(owner.label) === p && this.owners.delete(owner.label),
    );
    return p;
  }

  /** Called when an ownership socket closes that this side did not release. */
  onSocketLost(fn: () => void): void {
    this.lostHandler = fn;
  }

  /** Forgets the owners' sockets without a close frame: the engine is gone. */
  abandon(): void {
    const links = [...this.owners.values()];
    this.owners.clear();
    for (const l of links) void l.then((link) => link.destroy(), () => {});
  }

  async submit(owner: OwnerSpec, spec: JobSpec): Promise<Submitted> {
    const link = await this.ownerLink(owner);
    const data = await link.request({ type: 'submit', project: owner.project, job: spec, ...traceContext(this.info) }, this.deadline());
    return data as unknown as Submitted;
  }

  async cancel(owner: OwnerSpec, jobId: string): Promise<JobRow> {
    const have = this.owners.get(owner.label);
    const link = have ? await have.catch(() => undefined) : undefined;
    if (!link || link.closed) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} is running for this owner`);
    const data = await link.request({ type: 'cancel', job_id: jobId }, this.deadline());
    return data.job as JobRow;
  }

  /** A job that belongs to no ownership socket: it runs until it ends, is cancelled, or the engine stops. */
  async detach(project: string, spec: JobSpec): Promise<Submitted> {
    const { data } = await controlRequest(this.gate, this.files, this.who, { type: 'detach', project, job: spec, ...traceContext(this.info) });
    return data as unknown as Submitted;
  }

  /** Tells the engine an approval was decided, so the job waiting for it moves now. */
  async decision(approvalId: string, owner?: string): Promise<void> {
    const have = owner ? this.owners.get(owner) : undefined;
    const link = have ? await have.catch(() => undefined) : undefined;
    if (link && !link.closed) {
      await link.request({ type: 'decision', approval_id: approvalId, ...traceContext(this.info) }, this.deadline());
      return;
    }
    await controlRequest(this.gate, this.files, this.who, { type: 'decision', approval_id: approvalId, ...traceContext(this.info) });
  }

  /** A normal end of an owner: the engine cancels what it still has and acknowledges once cleaned up. */
  async release(owner: string): Promise<void> {
    const have = this.owners.get(owner);
    if (!have) return;
    this.owners.delete(owner);
    const link = await have.catch(() => undefined);
    if (!link || link.closed) return;
    try {
      await link.request({ type: 'close' }, this.deadline());
    } catch {
      // The engine is gone or late: closing the socket below cancels the owner's jobs all the same.
    } finally {
      link.destroy();
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.owners.keys()].map((o) => this.release(o)));
  }
}
