/*
 * A client's socket to the profile's shared engine.
 *
 *   connectEngine(ticket) ─► socket private to this user? (files.ts) ─► connect
 *   ─► hello{role, nonce, owner?} ◄─ challenge{nonce, engine proof} ─► proof checked
 *   ─► auth{client proof} ◄─ ready{engine}            (or error, and the socket closes)
 *   request(frame) ─► reply{id, data} | error{id, code}; each within its deadline
 *
 * A request that is not answered in time, or a fault, closes the socket: on an
 * ownership socket that is the engine's signal to cancel the owner's jobs, which
 * is the safe reading of an exchange nobody can vouch for any more.
 */
import { connect, type Socket } from 'node:net';
import type { EngineFrame, Hello } from '../../../gen/types/engine-frame.js';
import type { EngineReply } from '../../../gen/types/engine-reply.js';
import type { Limits } from '../../../gen/types/limits.js';
import { type ErrorCode, ERRORS, ScError } from '../../errors.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { checkSocketPeer, type EngineFiles, newNonce, proof, proofMatches, readToken } from './files.js';
import { FrameChannel } from './wire.js';

export type EngineInfo = Extract<EngineReply, { type: 'ready' }>['engine'];
export type OwnerHello = NonNullable<Hello['owner']>;
type Request = EngineFrame extends infer F ? (F extends { id: number } ? Omit<F, 'id'> : never) : never;

interface Pending {
  resolve: (data: Record<string, unknown>) => void;
  reject: (err: ScError) => void;
  timer: NodeJS.Timeout;
}

const codeOf = (code: string): ErrorCode => (code in ERRORS ? (code as ErrorCode) : 'SC_ENGINE_PROTOCOL');

export class EngineLink {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private failure: ScError | undefined;
  private readonly closeWaiters: Array<() => void> = [];
  private chan!: FrameChannel<'engine-reply'>;
  engine!: EngineInfo;

  private constructor(readonly sock: Socket, readonly role: 'control' | 'owner') {}

  /** Opens and authenticates a socket; a refusal (capacity, peer, protocol) rejects with its code. */
  static open(ticket: GateTicket, files: EngineFiles, limits: Limits, role: 'control' | 'owner', owner?: OwnerHello): Promise<EngineLink> {
    assertTicket(ticket, 'engine:connect');
    checkSocketPeer(files.sock);
    const token = readToken(files);
    return new Promise((resolve, reject) => {
      const sock = connect(files.sock);
      const link = new EngineLink(sock, role);
      const nonce = newNonce();
      let stage: 'challenge' | 'ready' | 'open' = 'challenge';
      const fail = (err: ScError) => {
        clearTimeout(deadline);
        link.fail(err);
        if (stage !== 'open') reject(err);
      };
      const deadline = setTimeout(() => fail(new ScError('SC_ENGINE_TIMEOUT', `the engine did not complete the handshake within ${limits.engine.handshake_deadline_ms} ms`)), limits.engine.handshake_deadline_ms);
      sock.on('error', (err: NodeJS.ErrnoException) => {
        const gone = err.code === 'ENOENT' || err.code === 'ECONNREFUSED';
        fail(new ScError(gone ? 'SC_ENGINE_NOT_RUNNING' : 'SC_ENGINE_UNAVAILABLE', gone ? `no engine is listening on ${files.sock}` : `engine socket: ${err.message}`));
      });
      sock.on('close', () => fail(link.failure ?? new ScError('SC_ENGINE_UNAVAILABLE', 'the engine closed the socket')));
      link.chan = new FrameChannel(sock, 'engine-reply', limits.engine, limits.ownership.response_deadline_ms, (f) => {
        if (stage === 'challenge' && f.type === 'challenge') {
          if (!proofMatches(proof(token, 'engine', f.nonce, nonce), f.proof)) return fail(new ScError('SC_ENGINE_PEER_REFUSED', 'the process on the engine socket does not hold this profile\'s engine token'));
          stage = 'ready';
          void link.chan.send({ type: 'auth', proof: proof(token, 'client', f.nonce, nonce) });
        } else if (stage === 'ready' && f.type === 'ready') {
          clearTimeout(deadline);
          stage = 'open';
          link.engine = f.engine;
          resolve(link);
        } else if (f.type === 'error') {
          // A refusal keeps its decision id across the socket, so the error line can name it.
          const err = new ScError(codeOf(f.code), f.message, f.decision_id ? { decision_id: f.decision_id } : undefined);
          // A refused request leaves the socket usable; anything else ends it.
          if (stage === 'open' && f.id !== null && f.fatal !== true) link.settle(f.id, (p) => p.reject(err));
          else fail(err);
        } else if (stage === 'open' && f.type === 'reply') {
          link.settle(f.id, (p) => p.resolve(f.data));
        } else {
          fail(new ScError('SC_ENGINE_PROTOCOL', `unexpected ${f.type} frame from the engine`));
        }
      }, (code, detail) => fail(new ScError(code, detail)));
      sock.once('connect', () => void link.chan.send({ type: 'hello', version: 1, role, nonce, ...(owner ? { owner } : {}) }));
    });
  }

  private settle(id: number, fn: (p: Pending) => void): void {
    const p = this.pending.get(id);
    if (!p) return this.fail(new ScError('SC_ENGINE_PROTOCOL', `the engine answered request ${id}, which is not outstanding`));
    this.pending.delete(id);
    clearTimeout(p.timer);
    fn(p);
  }

  private fail(err: ScError): void {
    if (!this.failure) this.failure = err;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.failure);
    }
    this.pending.clear();
    this.sock.destroy();
    for (const w of this.closeWaiters.splice(0)) w();
  }

  get closed(): boolean {
    return this.failure !== undefined || this.sock.destroyed;
  }

  /** Why the socket closed, once it has. */
  get reason(): ScError | undefined {
    return this.failure;
  }

  /** Resolves once the socket is closed, for whatever reason. */
  whenClosed(): Promise<void> {
    return this.closed ? Promise.resolve() : new Promise((r) => this.closeWaiters.push(r));
  }

  /** One request and its answer. Not answered within deadlineMs: the socket is closed. */
  request(frame: Request, deadlineMs: number): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(this.failure ?? new ScError('SC_ENGINE_UNAVAILABLE', 'the engine socket is closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ScError('SC_ENGINE_TIMEOUT', `the engine did not answer ${frame.type} within ${deadlineMs} ms`));
        this.fail(new ScError('SC_ENGINE_TIMEOUT', `${frame.type} was not answered in time`));
      }, deadlineMs);
      this.pending.set(id, { resolve, reject, timer });
      void this.chan.send({ ...frame, id } as EngineFrame);
    });
  }

  destroy(): void {
    this.fail(new ScError('SC_ENGINE_UNAVAILABLE', 'closed by this client'));
  }
}
