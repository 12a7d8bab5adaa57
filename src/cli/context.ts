/*
 * What a command can reach, opened lazily: the profile directory, state.db, the
 * secret store and the policy are touched only by the commands that use them.
 */
import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { settleDeadOwners } from '../engine/owners.js';
import { ScError } from '../errors.js';
import type { GateEnv } from '../policy/gate.js';
import { homeFolders } from '../policy/home.js';
import { type Policy, shippedPolicy } from '../policy/load.js';
import { cliRequest, trustOf } from '../policy/requests.js';
import { type Db, openDb } from '../store/db.js';
import { ensureProfileDir, type ProfileChoice, resolveProfile } from '../store/profile.js';
import { SecretStore, scrubProfileSecrets } from '../store/secrets.js';
import type { Globals } from './parse.js';
import { type Style, style, wantsColour } from './style.js';

export interface Io {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

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

export class Ctx {
  readonly profile: ProfileChoice;
  private _db: Db | undefined;
  private _secrets: SecretStore | undefined;
  private _workspace: string | undefined;
  private _style: Style | undefined;
  private _homes: readonly string[] | undefined;

  /**
   * `host` is set by the library (src/lib): its policy directory, loaded and frozen by
   * the host, and the name its decisions are audited under (`host:NAME`, as the CLI user).
   */
  constructor(readonly io: Io, readonly globals: Globals, private readonly host?: { readonly policy: Policy; readonly owner: string }) {
    this.profile = resolveProfile(globals.profile, io.env, io.cwd);
    if (globals.workspace !== undefined) this._workspace = canonicalWorkspace(globals.workspace, io.cwd);
  }

  get json(): boolean {
    return this.globals.json;
  }

  /** Colour and tables for stdout: colour only at a terminal, without --json and without NO_COLOR. */
  get style(): Style {
    return (this._style ??= style(!this.globals.json && wantsColour(this.io.stdout, this.io.env)));
  }

  /** The canonical project, or undefined when --project (or --workspace) was not given. */
  get workspace(): string | undefined {
    return this._workspace;
  }

  requireWorkspace(command: string): string {
    if (this._workspace === undefined) {
      throw new ScError('SC_WORKSPACE_REQUIRED', `${command} needs the project: --project DIR (or --workspace DIR), e.g. shadowcode --project /path/to/project ${command}`);
    }
    return this._workspace;
  }

  policy(): Policy {
    return this.host?.policy ?? shippedPolicy();
  }

  /** Who the CLI user is in audit rows and decisions: `cli`, or `host:NAME` for an embedding host. */
  get owner(): string {
    return this.host?.owner ?? 'cli';
  }

  db(): Db {
    if (!this._db) {
      ensureProfileDir(this.profile.dir);
      this._db = openDb(this.profile.dir, this.policy().limits.cli.sqlite_busy_timeout_ms);
      // Any command that opens the profile settles what dead processes left: no one is shown a task that cannot move.
      settleDeadOwners(this._db, this.policy());
      // Everything this command prints is scrubbed of the stored secrets (cli/output.ts).
      scrubProfileSecrets(this.profile.dir);
    }
    return this._db;
  }

  secrets(): SecretStore {
    return (this._secrets ??= new SecretStore(this.profile.dir, this.db(), this.policy().limits.secrets));
  }

  gate(): GateEnv {
    return { policy: this.policy(), db: () => this.db(), homes: this.homes() };
  }

  /** The home folders of the user at this terminal (their HOME and their account's), for the gate's project.holds_home. */
  homes(): readonly string[] {
    return (this._homes ??= homeFolders(this.io.env));
  }

  /** A CLI request: the person at the terminal, acting on the selected project (if any). */
  request(action: string, extra: Partial<Omit<GateRequest, 'action' | 'principal' | 'project'>> = {}): GateRequest {
    const path = this._workspace;
    return cliRequest(this.owner, path === undefined ? null : trustOf(this.db(), path), action, extra);
  }

  close(): void {
    this._db?.close();
    this._db = undefined;
  }
}
