/*
 * The engine a server is a door to. Without a shared engine running for the
 * profile, `mcp serve` opens this temporary one over the profile store and
 * closes it when the server exits. Everything is opened on first use.
 */
import type { Settings } from '../../gen/types/settings.js';
import type { Policy } from '../policy/load.js';
import { flushAudit } from '../store/audit.js';
import { type Db, openDb } from '../store/db.js';
import { ensureProfileDir } from '../store/profile.js';
import { SecretStore } from '../store/secrets.js';
import { readSettings } from '../store/settings.js';
import { reconcileChanges } from './files.js';
import { Jobs } from './jobs.js';

export class Engine {
  readonly mode = 'temporary' as const;
  private _db: Db | undefined;
  private _secrets: SecretStore | undefined;
  private _settings: Settings | undefined;
  private _jobs: Jobs | undefined;

  constructor(readonly profileDir: string, readonly policy: Policy, readonly env: NodeJS.ProcessEnv) {}

  db(): Db {
    if (!this._db) {
      ensureProfileDir(this.profileDir);
      this._db = openDb(this.profileDir, this.policy.limits.cli.sqlite_busy_timeout_ms);
      reconcileChanges(this._db, this.policy.limits.jobs.checkpoint_bytes);
    }
    return this._db;
  }

  /** The job engine; started on first use, which also settles jobs a dead process left behind. */
  jobs(): Jobs {
    return (this._jobs ??= new Jobs({ db: () => this.db(), policy: this.policy, env: this.env }));
  }

  /** Cancels what an owner still has and waits for its processes to end. */
  async releaseOwner(owner: string): Promise<void> {
    await this._jobs?.cancelOwner(owner);
  }

  async shutdown(): Promise<void> {
    await this._jobs?.close();
    this.close();
  }

  secrets(): SecretStore {
    return (this._secrets ??= new SecretStore(this.profileDir, this.db(), this.policy.limits.secrets));
  }

  settings(): Settings {
    return (this._settings ??= readSettings(this.profileDir));
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
