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
import { type JobRow, Jobs } from './jobs.js';

export type EngineMode = 'temporary' | 'shared' | 'daemon';

export class Engine {
  private _db: Db | undefined;
  private _secrets: SecretStore | undefined;
  private _settings: Settings | undefined;
  private _jobs: Jobs | undefined;
  private _background: Background | undefined;
  private remote: RemoteEngine | undefined;

  constructor(readonly profileDir: string, readonly policy: Policy, readonly env: NodeJS.ProcessEnv, private readonly role: 'temporary' | 'daemon' = 'temporary') {}

  get mode(): EngineMode {
    return this.remote ? 'shared' : this.role;
  }

  /** The pid of the shared engine this one forwards to, if any. */
  get sharedPid(): number | null {
    return this.remote?.info.pid ?? null;
  }

  /** From now on jobs go to the profile's shared engine. */
  useShared(remote: RemoteEngine): void {
    this.remote = remote;
  }

  db(): Db {
    if (!this._db) {
      ensureProfileDir(this.profileDir);
      this._db = openDb(this.profileDir, this.policy.limits.cli.sqlite_busy_timeout_ms);
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
    if (this.remote) return this.remote.cancel(owner, jobId);
    return this.jobs().cancel(jobId);
  }

  /** An approval was decided in the store: wake what waits for it. */
  async notifyDecision(approvalId: string, owner?: string): Promise<void> {
    if (this.remote) return this.remote.decision(approvalId, owner);
    this._jobs?.notifyDecision(approvalId);
  }

  /** Cancels what an owner still has and waits for its processes to end. */
  async releaseOwner(owner: string): Promise<void> {
    if (this.remote) return this.remote.release(owner);
    await this._jobs?.cancelOwner(owner);
  }

  async shutdown(): Promise<void> {
    await this.remote?.close();
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
