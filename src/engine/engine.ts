/*
 * The engine a server or a CLI command is a door to.
 *
 *   temporary  no shared engine runs for the profile: jobs run in this process,
 *              over the profile store, and end when it exits (decisions polled)
 *   shared     a shared engine runs (`shadowcode engine start`): jobs go to it over
 *              ownership sockets (daemon/remote.ts); this process only reads the store
 *   daemon     this process is the shared engine: its queue serves every client
 *              (decisions pushed over the socket, never polled)
 *
 * Everything is opened on first use.
 */
import type { Settings } from '../../gen/types/settings.js';
import { ScError } from '../errors.js';
import type { Policy } from '../policy/load.js';
import { flushAudit } from '../store/audit.js';
import { type Db, openDb } from '../store/db.js';
import { ensureProfileDir } from '../store/profile.js';
import { SecretStore, scrubProfileSecrets } from '../store/secrets.js';
import { readSettings } from '../store/settings.js';
import type { RemoteEngine } from './daemon/remote.js';
import { Background } from './engine-background.js';
import { admitJob, type JobSpec, type OwnerSpec, type Submitted } from './engine-submit.js';
import { reconcileChanges } from './files.js';
import { type JobRow } from './job-events.js';
import { Jobs } from './jobs.js';
import { pidRunning, reapOrphans, settleDeadOwners } from './owners.js';

export type EngineMode = 'temporary' | 'shared' | 'daemon';

export class Engine {
  private _db: Db | undefined;
  private _secrets: SecretStore | undefined;
  private _settings: Settings | undefined;
  private _jobs: Jobs | undefined;
  private _background: Background | undefined;
  private remote: RemoteEngine | undefined;
  private _lost: { pid: number; at: string; settled: number } | null = null;
  /** The shared engine whose pid is being watched after one of its sockets closed. */
  private watching: RemoteEngine | undefined;
  /** Told once when the shared engine this one forwarded to is found gone (a server logs it). */
  onSharedLost: ((message: string) => void) | undefined;

  constructor(readonly profileDir: string, readonly policy: Policy, readonly env: NodeJS.ProcessEnv, private readonly role: 'temporary' | 'daemon' = 'temporary') {}

  get mode(): EngineMode {
    this.checkShared();
    return this.remote ? 'shared' : this.role;
  }

  /** The pid of the shared engine this one forwards to, if any; never one that is gone. */
  get sharedPid(): number | null {
    this.checkShared();
    return this.remote?.info.pid ?? null;
  }

  /** The shared engine this one forwarded to until it went away, and how many of our jobs that settled. */
  get lostShared(): { pid: number; at: string; settled: number } | null {
    this.checkShared();
    return this._lost;
  }

  /** From now on jobs go to the profile's shared engine. */
  useShared(remote: RemoteEngine): void {
    this.remote = remote;
    // A closed ownership socket is the first sign of an engine's death; its pid is the proof.
    remote.onSocketLost(() => {
      // Settling the gone engine's jobs could fail (a busy store): the next call settles them.
      this.confirmLost(remote).catch(() => {});
    });
  }

  /**
   * The shared engine is gone: its jobs of ours can never finish, so they are settled
   * (cancelled, owner_gone) and from now on jobs run in this process, as with no shared
   * engine. A server does not move to an engine started later: restarting it does.
   */
  private checkShared(): void {
    const remote = this.remote;
    if (!remote || pidRunning(remote.info.pid)) return;
    // Settled before the engine is let go: if the store is busy this throws, and the next call tries again.
    const settled = reapOrphans(this.db(), this.policy);
    this.remote = undefined;
    remote.abandon();
    this._lost = { pid: remote.info.pid, at: new Date().toISOString(), settled };
    this.onSharedLost?.(
      `the shared engine (pid ${remote.info.pid}) is gone; ${settled} unfinished job(s) it ran were cancelled. New jobs run in this process's own engine; restart this server after shadowcode engine start to share an engine again`,
    );
  }

  /**
   * The socket closed: the engine is dying or gone, or closed just this socket. A dying
   * one usually leaves within moments, so the pid is probed often at first; after that
   * it is still watched, less often, for as long as this engine is the one in use. A
   * watch that gave up once left a server that said nothing of an engine slow to exit
   * until a client next asked it something.
   */
  private async confirmLost(remote: RemoteEngine): Promise<void> {
    if (this.watching === remote) return;
    this.watching = remote;
    const fast = Date.now() + this.policy.limits.ownership.kill_grace_ms * 10;
    try {
      while (this.remote === remote && pidRunning(remote.info.pid)) {
        // Unreferenced: the watch never keeps a process alive on its own.
        await new Promise((r) => setTimeout(r, Date.now() < fast ? 20 : this.policy.limits.ownership.lost_watch_ms).unref());
      }
    } finally {
      if (this.watching === remote) this.watching = undefined;
    }
    if (this.remote === remote) this.checkShared();
  }

  db(): Db {
    if (!this._db) {
      ensureProfileDir(this.profileDir);
      this._db = openDb(this.profileDir, this.policy.limits.cli.sqlite_busy_timeout_ms);
      settleDeadOwners(this._db, this.policy);
      scrubProfileSecrets(this.profileDir);
      reconcileChanges(this._db, this.policy.limits.jobs.checkpoint_bytes);
    }
    return this._db;
  }

  /** The job engine of this process; started on first use, which also settles jobs a dead process left behind. */
  jobs(): Jobs {
    return (this._jobs ??= new Jobs({ db: () => this.db(), policy: this.policy, env: this.env, poll: this.role !== 'daemon' }));
  }

  /**
   * Background processes of this engine's tasks, which outlive the task that started
   * them until stopped or until this engine shuts down.
   */
  background(): Background {
    return (this._background ??= new Background({ policy: this.policy, db: () => this.db() }, this.env));
  }

  /** Submits a job for an owner: to the shared engine when one is in use, else to this process's queue. */
  async submitJob(owner: OwnerSpec, spec: JobSpec): Promise<Submitted> {
    this.checkShared();
    if (this.remote) return this.remote.submit(owner, spec);
    return admitJob({ policy: this.policy, db: () => this.db() }, this.jobs(), { kind: owner.transport, owner: owner.label }, owner.project, owner.project, spec);
  }

  /**
   * A detached job (`run --detach`): owned by no connection, it survives the command
   * that submitted it, so it needs the shared engine; a temporary one would die with it.
   */
  async submitDetached(project: string, spec: JobSpec): Promise<Submitted> {
    if (!this.remote) throw new ScError('SC_ENGINE_NOT_RUNNING', 'a detached job needs the shared engine: run shadowcode engine start first');
    return this.remote.detach(project, spec);
  }

  /** Cancels one of the owner's jobs wherever it is; the caller has checked that the owner holds it. */
  async cancelJob(owner: OwnerSpec, jobId: string): Promise<JobRow> {
    this.checkShared();
    if (this.remote) return this.remote.cancel(owner, jobId);
    return this.jobs().cancel(jobId);
  }

  /**
   * An approval was decided in the store: wake what waits for it. False when the shared
   * engine could not be told now (busy, or gone); the decision stands in the store, and the
   * engine re-reads it as soon as one of its sockets frees (a gone engine's jobs are settled).
   */
  async notifyDecision(approvalId: string, owner?: string): Promise<boolean> {
    if (!this.remote) {
      this._jobs?.notifyDecision(approvalId);
      return true;
    }
    try {
      await this.remote.decision(approvalId, owner);
      return true;
    } catch (err) {
      if (undeliverable(err)) return false;
      throw err;
    }
  }

  /** Cancels what an owner still has and waits for its processes to end. */
  async releaseOwner(owner: string): Promise<void> {
    if (this.remote) return this.remote.release(owner);
    await this._jobs?.cancelOwner(owner);
  }

  async shutdown(): Promise<void> {
    const remote = this.remote;
    // No longer the engine in use: a watch of its pid ends, and never reopens this store.
    this.remote = undefined;
    await remote?.close();
    await this._jobs?.close();
    await this._background?.stopAll();
    this.close();
  }

  secrets(): SecretStore {
    return (this._secrets ??= new SecretStore(this.profileDir, this.db(), this.policy.limits.secrets));
  }

  settings(): Settings {
    return (this._settings ??= readSettings(this.profileDir));
  }

  /** settings.json as it is now (a task reads its model when it starts, not when the server did). */
  freshSettings(): Settings {
    this._settings = readSettings(this.profileDir);
    return this._settings;
  }

  close(): void {
    if (this._db) {
      try {
        flushAudit(this._db);
      } catch {
        // Closing goes on; what could not be written is lost with the process, as on a crash.
      }
    }
    this._db?.close();
    this._db = undefined;
  }
}

/** Failures to reach the shared engine after which a recorded decision still takes effect later. */
export function undeliverable(err: unknown): boolean {
  return err instanceof ScError && ['SC_ENGINE_BUSY', 'SC_ENGINE_UNAVAILABLE', 'SC_ENGINE_TIMEOUT', 'SC_ENGINE_NOT_RUNNING'].includes(err.code);
}
