/*
 * One MCP owner: a stdio connection, or an HTTP gateway shared by its callers.
 * It is fixed to one canonical project for its whole life; trust is re-read for
 * every request, so `shadowcode untrust` takes effect on the next call.
 */
import { randomBytes } from 'node:crypto';
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { Engine } from '../engine/engine.js';
import type { OwnerSpec } from '../engine/engine-submit.js';
import { type GateEnv } from '../policy/gate.js';
import { getProject } from '../store/projects.js';
import { OperationLimiter } from './operations.js';

export interface ConnectionOptions {
  readonly transport: 'stdio' | 'http';
  readonly project: string;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
  readonly engine: Engine;
}

export class Connection {
  readonly owner: string;
  readonly ops: OperationLimiter;

  constructor(readonly opts: ConnectionOptions) {
    this.owner = `${opts.transport}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const l = opts.engine.policy.limits.stdio_server;
    this.ops = new OperationLimiter(l.concurrent_operations, l.operation_deadline_ms);
  }

  get engine(): Engine {
    return this.opts.engine;
  }

  get project(): string {
    return this.opts.project;
  }

  /** This connection as the owner of its jobs, for the engine. */
  get ownerSpec(): OwnerSpec {
    return { label: this.owner, transport: this.opts.transport, project: this.project };
  }

  gate(): GateEnv {
    return { policy: this.engine.policy, db: () => this.engine.db() };
  }

  request(action: string, extra: Partial<Pick<GateRequest, 'resource' | 'args' | 'requested_level'>> = {}): GateRequest {
    const p = getProject(this.engine.db(), this.project);
    return {
      action,
      principal: { kind: this.opts.transport, owner: this.owner, allow_write: this.opts.allowWrite, allow_approvals: this.opts.allowApprovals },
      project: { path: p.path, trusted: p.trusted, level: p.level, network: p.network },
      ...extra,
    };
  }
}
