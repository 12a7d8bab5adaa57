/*
 * What an operation needs from its caller, and the one way a surface makes it.
 *
 *   a surface (cli/context.ts for the CLI, console/open.ts for the page, lib/shadowcode.ts for a host)
 *     ─► new OpsSession({ profileDir, project, env, policy?, owner })
 *          db()       opened on first use: the profile made 0700, the jobs of dead owners
 *                     settled, the stored secrets registered for scrubbing
 *          request()  the caller as the gate's principal: its owner (`cli`, `console`,
 *                     `host:NAME`) and the selected project with its trust as stored now
 *          gate       the GateEnv every operation enforces through
 *     ─► an operation (src/ops/*): typed input ─► gate ─► typed result
 *
 * An operation asks for the part it uses: OpsEnv (the gate, the store, the policy, the
 * profile, the environment, the caller's requests), or OpsContext (with the project, the
 * owner, the home folders and the secret store too). Nothing here knows which surface asks.
 */
import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { settleDeadOwners } from '../engine/owners.js';
import { ScError } from '../errors.js';
import type { GateEnv } from '../policy/gate.js';
import { homeFolders } from '../policy/home.js';
import { type Policy, shippedPolicy } from '../policy/load.js';
import { cliRequest, trustOf } from '../policy/requests.js';
import { type Db, openDb } from '../store/db.js';
import { ensureProfileDir } from '../store/profile.js';
import { SecretStore, scrubProfileSecrets } from '../store/secrets.js';

/** A request of the caller for the gate: its principal, acting on its project (if any). */
export type CallerRequest = (action: string, extra?: Partial<Omit<GateRequest, 'action' | 'principal' | 'project'>>) => GateRequest;

export interface OpsEnv {
  readonly gate: GateEnv;
  readonly db: () => Db;
  readonly policy: Policy;
  readonly profileDir: string;
  /** The caller's environment: HOME for ~/, PATH for a command, OTEL_* for telemetry. */
  readonly env: NodeJS.ProcessEnv;
  /** The caller's request, as the gate sees it: principal and the selected project. */
  readonly request: CallerRequest;
}

export interface OpsContext extends OpsEnv {
  /** Who the caller is in audit rows and decisions: `cli`, `console` or `host:NAME`. */
  readonly owner: string;
  /** The selected project's canonical path; undefined when none is selected. */
  readonly project: string | undefined;
  /** The caller's home folders (its HOME and its account's), for the gate's project.holds_home. */
  readonly homes: readonly string[];
  readonly secrets: () => SecretStore;
}

/** A project directory as given, resolved against `cwd` to its real path; it must exist and be a directory. */
export function canonicalWorkspace(dir: string, cwd: string): string {
  let real: string;
  try {
    real = realpathSync(resolve(cwd, dir));
  } catch {
    throw new ScError('SC_WORKSPACE_INVALID', `project ${dir} does not exist`);
  }
  if (!statSync(real).isDirectory()) throw new ScError('SC_WORKSPACE_INVALID', `project ${dir} is not a directory`);
  return real;
}

/** The selected project of an operation that acts on one (every surface selects it before asking). */
export function projectOf(ops: Pick<OpsContext, 'project'>, what: string): string {
  if (ops.project === undefined) throw new ScError('SC_WORKSPACE_REQUIRED', `${what} needs a project`);
  return ops.project;
}

export interface SessionOptions {
  /** The profile directory, resolved (store/profile.ts resolveProfile). */
  readonly profileDir: string;
  /** The canonical project (canonicalWorkspace), or undefined for none. */
  readonly project: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  /** The policy in force (a host's, frozen); unset: the shipped one. */
  readonly policy?: Policy;
  readonly owner: string;
}

/** One caller's context on one profile, opened lazily: the store, the secret store and the policy are touched only when used. */
export class OpsSession implements OpsContext {
  private _db: Db | undefined;
  private _secrets: SecretStore | undefined;
  private _homes: readonly string[] | undefined;

  constructor(private readonly o: SessionOptions) {}

  get profileDir(): string {
    return this.o.profileDir;
  }

  get project(): string | undefined {
    return this.o.project;
  }

  get env(): NodeJS.ProcessEnv {
    return this.o.env;
  }

  get owner(): string {
    return this.o.owner;
  }

  get policy(): Policy {
    return this.o.policy ?? shippedPolicy();
  }

  db(): Db {
    if (!this._db) {
      ensureProfileDir(this.o.profileDir);
      this._db = openDb(this.o.profileDir, this.policy.limits.cli.sqlite_busy_timeout_ms);
      // Whoever opens the profile settles what dead processes left: no one is shown a task that cannot move.
      settleDeadOwners(this._db, this.policy);
      // Everything a surface shows is scrubbed of the stored secrets (cli/output.ts, the console's answers).
      scrubProfileSecrets(this.o.profileDir);
    }
    return this._db;
  }

  secrets(): SecretStore {
    return (this._secrets ??= new SecretStore(this.o.profileDir, this.db(), this.policy.limits.secrets));
  }

  get gate(): GateEnv {
    return { policy: this.policy, db: () => this.db(), homes: this.homes };
  }

  get homes(): readonly string[] {
    return (this._homes ??= homeFolders(this.o.env));
  }

  request(action: string, extra: Partial<Omit<GateRequest, 'action' | 'principal' | 'project'>> = {}): GateRequest {
    const path = this.o.project;
    return cliRequest(this.o.owner, path === undefined ? null : trustOf(this.db(), path), action, extra);
  }

  close(): void {
    this._db?.close();
    this._db = undefined;
  }
}
