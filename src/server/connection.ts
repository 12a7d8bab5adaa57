/*
 * One MCP owner: a stdio connection, or an HTTP gateway shared by its callers.
 * It is fixed to one canonical project for its whole life; trust is re-read for
 * every request, inside the transaction that records its decision (GateEnv.project),
 * so `shadowcode untrust` takes effect on the next call.
 */
import { randomBytes } from 'node:crypto';
import type { GateRequest } from '../../gen/types/gate-request.js';
import type { Engine } from '../engine/engine.js';
import type { OwnerSpec } from '../engine/engine-submit.js';
import { type GateEnv, type PendingRequest } from '../policy/gate.js';
import { connectionPrincipal, connectionRequest, trustOf } from '../policy/requests.js';
import type { Db } from '../store/db.js';
import { OperationLimiter } from './operations.js';

export interface ConnectionOptions {
  readonly transport: 'stdio' | 'http';
  readonly project: string;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
  readonly engine: Engine;
  /** The owner label, when the embedding host names its servers (`stdio:PID:host-N`); else a fresh one. */
  readonly owner?: string;
}

export class Connection {
  readonly owner: string;
  readonly ops: OperationLimiter;

  private readonly env: GateEnv;
  /** Who this connection is to the gate: its transport, owner label and flags. */
  readonly principal: GateRequest['principal'];

  constructor(readonly opts: ConnectionOptions) {
    this.owner = opts.owner ?? `${opts.transport}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const l = opts.engine.policy.limits.stdio_server;
    this.ops = new OperationLimiter(l.concurrent_operations, l.operation_deadline_ms);
    this.principal = Object.freeze(connectionPrincipal(opts.transport, this.owner, opts.allowWrite, opts.allowApprovals));
    this.env = Object.freeze({ policy: opts.engine.policy, db: () => this.engine.db(), project: (db: Db) => trustOf(db, this.project) });
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
    return this.env;
  }

  /** A request for the gate; it fills in the project's trust when it decides. */
  request(action: string, extra: Partial<Pick<GateRequest, 'resource' | 'args' | 'requested_level'>> = {}): PendingRequest {
    return connectionRequest(this.principal, action, extra);
  }

  /** A request with the project's trust as stored now: for explaining what would be decided, not for deciding. */
  requestNow(action: string, extra: Partial<Pick<GateRequest, 'resource' | 'args' | 'requested_level'>> = {}): GateRequest {
    return { ...this.request(action, extra), project: this.env.project!(this.engine.db()) };
  }
}
