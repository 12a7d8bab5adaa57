/*
 * The shared engine: one per profile, serving every client of it on a Unix socket.
 *
 *   serveEngine(ticket) ─► engine.lock (another holder: return its absence of a start)
 *   ─► replace a stale engine.sock ─► fresh engine.token ─► listen 0600 ─► settle jobs
 *      a dead engine left ─► accept:
 *
 *   socket ─► cap (engine.connections) ─► hello ─► challenge ─► auth (both proofs)
 *     control: status | stop | decision | detach            (never counted as an owner)
 *     owner:   registered before its first job (cap ownership.owners_per_profile),
 *              confined to its project: submit | cancel | decision | status | close
 *   owner socket ends (EOF, fault, kill, abandoned exchange) ─► its running and queued
 *   jobs are cancelled, command groups reaped; only then is its place freed
 *
 * A refused submission (policy, limit, bad argv) is answered and the socket stays
 * usable; a malformed, out-of-order, unfinished or cross-project frame closes it.
 *
 * A submit, detach or decision frame's traceparent (telemetry on, on both sides) is the parent
 * of what the engine records for it: its gate decision, the job, the job's approvals and spawns.
 */
import { realpathSync, statSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { EngineFrame } from '../../../gen/types/engine-frame.js';
import type { EngineReply } from '../../../gen/types/engine-reply.js';
import { asScError, decisionOf, type ErrorCode, ScError } from '../../errors.js';
import type { GateEnv } from '../../policy/gate.js';
import type { Policy } from '../../policy/load.js';
import { sql } from '../../store/db.js';
import { ensureProfileDir } from '../../store/profile.js';
import { tel } from '../../telemetry/hooks.js';
import { assertTicket, type GateTicket } from '../../ticket.js';
import { newId } from '../../util/ids.js';
import { VERSION } from '../../version.js';
import { Engine } from '../engine.js';
import { admitJob, type JobSpec, type Submitter } from '../engine-submit.js';
import { ACTIVE, addEvent, getJob } from '../job-events.js';
import { settleJob, settleWatches } from '../owners.js';
import type { EngineInfo } from './client.js';
import { engineFiles, type EngineFiles, newNonce, proof, proofMatches, SOCKET_PATH_BYTES, writeToken } from './files.js';
import { acquireEngineLock, type EngineLock } from './lock.js';
import { FrameChannel } from './wire.js';

interface OwnerState {
  readonly label: string;
  readonly transport: 'stdio' | 'http' | 'cli';
  readonly project: string;
  accepted: number;
  cleaning: Promise<void> | undefined;
}

interface Peer {
  readonly sock: Socket;
  chan: FrameChannel<'engine-frame'>;
  stage: 'hello' | 'auth' | 'open' | 'closing';
  role: 'control' | 'owner' | undefined;
  clientNonce: string;
  readonly nonce: string;
  owner: OwnerState | undefined;
  pendingOwner: { label: string; transport: 'stdio' | 'http' | 'cli'; project: string } | undefined;
  handshake: NodeJS.Timeout | undefined;
}

export interface RunningEngine {
  readonly info: EngineInfo;
  /** The engine this process serves: its queue, supervisor, approvals and background list. */
  readonly engine: Engine;
  readonly files: EngineFiles;
  /** Resolves when the engine has stopped and released the profile. */
  readonly stopped: Promise<void>;
  stop(reason: string): Promise<void>;
}

export interface ServeOptions {
  readonly profileDir: string;
  readonly policy: Policy;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
  /** Called once with the engine before it serves (the CLI attaches the agent runtime here: the engine layer knows no models). */
  readonly prepare?: (engine: Engine) => void;
}

/** Runs fn in the trace of the client's span that sent the frame, when telemetry is on here. */
function inClientTrace<T>(f: { readonly traceparent?: string; readonly tracestate?: string }, fn: () => T): T {
  const t = tel();
  return t && f.traceparent ? t.withParent(f, fn) : fn();
}

/** Jobs a previous shared engine was running when it died can never finish: their queue went with it. */
export function settleEngineOrphans(engine: Engine): number {
  const db = engine.db();
  const rows = sql(db, `SELECT j.id, j.kind FROM jobs j WHERE j.state IN ${ACTIVE} AND EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.kind = 'engine')`).all() as Array<{ id: string; kind: string }>;
  // Holding the engine lock proves the engine that ran them is gone, even if its pid was reused.
  const n = rows.filter((r) => settleJob(db, r, 'engine_gone', {}, 'the shared engine that ran it stopped or died')).length;
  settleWatches(db, engine.policy);
  return n;
}

function canonicalProject(path: string): boolean {
  try {
    return realpathSync(path) === path && statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Starts the shared engine in this process, or returns null when another engine holds the profile. */
export async function serveEngine(ticket: GateTicket, o: ServeOptions): Promise<RunningEngine | null> {
  assertTicket(ticket, 'cli:engine.serve');
  ensureProfileDir(o.profileDir);
  const files = engineFiles(o.profileDir);
  if (Buffer.byteLength(files.sock) > SOCKET_PATH_BYTES) throw new ScError('SC_ENGINE_START_FAILED', `the socket path ${files.sock} is longer than ${SOCKET_PATH_BYTES} bytes; use a shorter --profile directory`);
  const lock = acquireEngineLock(files.lock);
  if (!lock) return null;
  try {
    return await start(files, lock, o);
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function start(files: EngineFiles, lock: EngineLock, o: ServeOptions): Promise<RunningEngine> {
  const L = o.policy.limits;
  // Holding the lock, any socket file here belongs to an engine that is gone.
  try {
    unlinkSync(files.sock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ScError('SC_ENGINE_START_FAILED', `cannot remove the stale socket ${files.sock}: ${(err as Error).message}`);
  }
  const token = writeToken(files);
  const engine = new Engine(o.profileDir, o.policy, o.env, 'daemon');
  const settled = settleEngineOrphans(engine);
  if (settled) o.log(`shadowcode engine: ${settled} job(s) of a previous engine recorded as cancelled`);
  engine.jobs();
  o.prepare?.(engine);
  const gate: GateEnv = { policy: o.policy, db: () => engine.db() };
  const info: EngineInfo = { pid: process.pid, version: VERSION, started_at: new Date().toISOString() };
  const peers = new Set<Peer>();
  const owners = new Map<string, OwnerState>();
  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));

  const server: Server = createServer({ allowHalfOpen: false });
  // Created 0600 from the start (umask), not chmod-ed after a window in which others could connect.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new ScError('SC_ENGINE_START_FAILED', `cannot listen on ${files.sock}: ${err.message}`)));
      server.listen(files.sock, () => resolve());
    });
  } finally {
    process.umask(umask);
  }

  const send = (p: Peer, frame: EngineReply) => p.chan.send(frame);
  const refuse = (p: Peer, id: number | null, err: ScError, fatal: boolean) => {
    void send(p, { type: 'error', id, code: err.code, message: err.message, ...decisionOf(err), ...(fatal ? { fatal: true } : {}) });
  };
  const drop = (p: Peer, id: number | null, code: ErrorCode, message: string) => {
    if (p.stage === 'closing') return;
    refuse(p, id, new ScError(code, message), true);
    p.sock.end();
    // A peer that will not take the error frame is not waited for.
    setTimeout(() => p.sock.destroy(), 200).unref();
  };

  /** Cancels and reaps the owner's jobs once, then frees its place. */
  const cleanOwner = (st: OwnerState): Promise<void> => {
    st.cleaning ??= engine
      .releaseOwner(st.label)
      .catch((err: unknown) => o.log(`shadowcode engine: cleanup of ${st.label} failed: ${(err as Error).message}`))
      .finally(() => {
        if (owners.get(st.label) === st) owners.delete(st.label);
      });
    return st.cleaning;
  };

  const admit = async (who: Submitter, project: string, spec: JobSpec, confinedTo: string) => {
    const r = await admitJob(gate, engine.jobs(), who, project, confinedTo, spec);
    // Marks the job as this engine's: if the engine dies, the next one settles it.
    addEvent(engine.db(), r.job.id, 'engine', { pid: process.pid });
    return r;
  };

  // This engine's unfinished jobs: those it admitted. A server's temporary engine has jobs of its own in the same store.
  const ownJobs = () =>
    sql(
      engine.db(),
      `SELECT id, kind, project, owner, state, title, created_at FROM jobs j WHERE state IN ${ACTIVE}
       AND EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.kind = 'engine' AND json_extract(e.body, '$.pid') = ?) ORDER BY created_at, id`,
    ).all(process.pid) as Array<{ id: string }>;

  const status = () => {
    const jobs = ownJobs();
    return {
      engine: info,
      socket: files.sock,
      owners: [...owners.values()].map((s) => ({ owner: s.label, transport: s.transport, project: s.project, jobs_accepted: s.accepted, closing: s.cleaning !== undefined })),
      connections: peers.size,
      jobs,
      background: engine.background().list(),
    };
  };

  const handle = async (p: Peer, f: EngineFrame): Promise<void> => {
    if (p.stage === 'hello') {
      if (f.type !== 'hello') return drop(p, null, 'SC_ENGINE_PROTOCOL', `expected hello, got ${f.type}`);
      p.role = f.role;
      p.clientNonce = f.nonce;
      p.pendingOwner = f.owner;
      p.stage = 'auth';
      return void send(p, { type: 'challenge', nonce: p.nonce, proof: proof(token, 'engine', p.nonce, f.nonce) });
    }
    if (p.stage === 'auth') {
      if (f.type !== 'auth') return drop(p, null, 'SC_ENGINE_PROTOCOL', `expected auth, got ${f.type}`);
      if (!proofMatches(proof(token, 'client', p.nonce, p.clientNonce), f.proof)) return drop(p, null, 'SC_ENGINE_PEER_REFUSED', "the client does not hold this profile's engine token");
      if (p.handshake) clearTimeout(p.handshake);
      if (stopping) return drop(p, null, 'SC_ENGINE_UNAVAILABLE', 'the engine is stopping');
      if (p.role === 'owner') {
        const want = p.pendingOwner as NonNullable<Peer['pendingOwner']>;
        if (owners.size >= L.ownership.owners_per_profile) return drop(p, null, 'SC_ENGINE_OWNERS_FULL', `${owners.size} ownership sockets are open, the most a profile may have; control requests still work`);
        if (owners.has(want.label)) return drop(p, null, 'SC_ENGINE_PROTOCOL', `owner ${want.label} already has an ownership socket`);
        if (!canonicalProject(want.project)) return drop(p, null, 'SC_ENGINE_PROTOCOL', `${want.project} is not a canonical project directory`);
        // Registered before anything is scheduled: whatever this socket submits is owned from the start.
        p.owner = { ...want, accepted: 0, cleaning: undefined };
        owners.set(want.label, p.owner);
      }
      p.stage = 'open';
      return void send(p, { type: 'ready', engine: info });
    }
    if (p.stage !== 'open') return;
    const owner = p.owner;
    try {
      switch (f.type) {
        case 'status':
          return void send(p, { type: 'reply', id: f.id, data: status() });
        case 'decision':
          inClientTrace(f, () => engine.jobs().notifyDecision(f.approval_id));
          return void send(p, { type: 'reply', id: f.id, data: {} });
        case 'stop':
          if (owner) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'stop is a control request');
          // The jobs it will cancel, so the stopper can count what was cancelled rather than what was listed.
          await send(p, { type: 'reply', id: f.id, data: { stopping: true, pid: process.pid, jobs: ownJobs().map((j) => j.id) } });
          void stop(`stop requested`);
          return;
        case 'detach': {
          if (owner) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'an ownership socket cannot submit detached jobs');
          if (!canonicalProject(f.project)) return refuse(p, f.id, new ScError('SC_WORKSPACE_INVALID', `${f.project} is not a canonical project directory`), false);
          const label = `detached:${process.pid}:${newId('d').slice(2)}`.slice(0, 128);
          const r = await inClientTrace(f, () => admit({ kind: 'cli', owner: label }, f.project, f.job, f.project));
          return void send(p, { type: 'reply', id: f.id, data: { ...r } });
        }
        case 'submit': {
          if (!owner) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'submit needs an ownership socket');
          if (owner.cleaning) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'the owner is closing');
          if (f.project !== owner.project) return drop(p, f.id, 'SC_ENGINE_PROJECT_MISMATCH', `this ownership socket is confined to ${owner.project}`);
          if (owner.accepted >= L.ownership.jobs_per_owner) return refuse(p, f.id, new ScError('SC_LIMIT_REACHED', `this ownership socket has accepted ${owner.accepted} jobs, the most one may; reconnect to submit more`), false);
          const r = await inClientTrace(f, () => admit({ kind: owner.transport, owner: owner.label }, f.project, f.job, owner.project));
          owner.accepted++;
          return void send(p, { type: 'reply', id: f.id, data: { ...r } });
        }
        case 'cancel': {
          if (!owner) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'cancel needs an ownership socket');
          const job = getJob(engine.db(), f.job_id);
          if (!job || job.owner !== owner.label || job.project !== owner.project) return refuse(p, f.id, new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(f.job_id)} of this owner`), false);
          return void send(p, { type: 'reply', id: f.id, data: { job: await engine.jobs().cancel(f.job_id) } });
        }
        case 'close': {
          if (!owner) return drop(p, f.id, 'SC_ENGINE_PROTOCOL', 'close needs an ownership socket');
          p.stage = 'closing';
          // A normal close is acknowledged only after the owner's jobs are cancelled and reaped.
          await cleanOwner(owner);
          await send(p, { type: 'reply', id: f.id, data: { closed: true } });
          p.sock.end();
          return;
        }
        default:
          return drop(p, null, 'SC_ENGINE_PROTOCOL', `${f.type} is out of order`);
      }
    } catch (err) {
      // A valid request that was refused: answered, and the socket stays usable.
      refuse(p, 'id' in f ? f.id : null, asScError(err), false);
    }
  };

  server.on('connection', (sock: Socket) => {
    if (stopping || peers.size >= L.engine.connections) {
      sock.end(`${JSON.stringify({ type: 'error', id: null, code: stopping ? 'SC_ENGINE_UNAVAILABLE' : 'SC_ENGINE_BUSY', message: stopping ? 'the engine is stopping' : `the engine has ${peers.size} sockets open, the most it allows`, fatal: true })}\n`);
      setTimeout(() => sock.destroy(), 200).unref();
      return;
    }
    const p: Peer = { sock, chan: undefined as never, stage: 'hello', role: undefined, clientNonce: '', nonce: newNonce(), owner: undefined, pendingOwner: undefined, handshake: undefined };
    peers.add(p);
    p.chan = new FrameChannel(sock, 'engine-frame', L.engine, L.ownership.response_deadline_ms, (f) => void handle(p, f), (code, detail) => drop(p, null, code, detail));
    p.handshake = setTimeout(() => drop(p, null, 'SC_ENGINE_PROTOCOL', `no authenticated hello within ${L.engine.handshake_deadline_ms} ms`), L.engine.handshake_deadline_ms);
    p.handshake.unref();
    sock.on('error', () => {});
    sock.on('close', () => {
      if (p.handshake) clearTimeout(p.handshake);
      peers.delete(p);
      // However the socket ended, what its owner still has is cancelled.
      if (p.owner) void cleanOwner(p.owner);
      // A slot is free: a decision recorded while every slot was taken is acted on now.
      if (!stopping) engine.jobs().recheckDecisions();
    });
  });

  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      o.log(`shadowcode engine: stopping (${reason})`);
      server.close();
      await Promise.all([...owners.values()].map(cleanOwner));
      await engine.shutdown();
      for (const p of peers) p.sock.destroy();
      for (const f of [files.sock, files.token]) {
        try {
          unlinkSync(f);
        } catch {
          /* already gone */
        }
      }
      lock.release();
      o.log('shadowcode engine: stopped');
      resolveStopped();
    })();
    return stopping;
  };

  o.log(`shadowcode engine: ready on ${files.sock} (pid ${process.pid})`);
  return { info, engine, files, stopped, stop };
}
