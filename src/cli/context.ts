/*
 * What a command can reach: the terminal (io), the global options, and the CLI user's
 * operation context (src/ops/context.ts), opened lazily: the profile directory, state.db,
 * the secret store and the policy are touched only by the commands that use them.
 *
 *   argv's globals ─► profile (resolved) + project (canonical) ─► OpsSession, owner `cli`
 *   ─► a command parses its own options, calls an operation with ctx.ops, renders the result
 */
import type { Readable, Writable } from 'node:stream';
import type { GateRequest } from '../../gen/types/gate-request.js';
import { ScError } from '../errors.js';
import { canonicalWorkspace, OpsSession } from '../ops/context.js';
import type { GateEnv } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import { type ProfileChoice, resolveProfile } from '../store/profile.js';
import type { SecretStore } from '../store/secrets.js';
import { type Style, style, wantsColour } from './style.js';

export interface Io {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

/** What the global options set (parse.ts splitGlobals). */
export interface Globals {
  workspace?: string;
  profile?: string;
  json: boolean;
  help: boolean;
  version: boolean;
}

export class Ctx {
  readonly profile: ProfileChoice;
  /** What operations get: the person at the terminal as the caller, on the selected project. */
  readonly ops: OpsSession;
  private _style: Style | undefined;

  /**
   * `host` gives another policy (loaded and frozen by its owner) and the name decisions are
   * audited under, as an embedding host has them (`host:NAME`); by default the shipped policy and `cli`.
   */
  constructor(readonly io: Io, readonly globals: Globals, host?: { readonly policy: Policy; readonly owner: string }) {
    this.profile = resolveProfile(globals.profile, io.env, io.cwd);
    const project = globals.workspace === undefined ? undefined : canonicalWorkspace(globals.workspace, io.cwd);
    this.ops = new OpsSession({ profileDir: this.profile.dir, project, env: io.env, owner: host?.owner ?? 'cli', ...(host ? { policy: host.policy } : {}) });
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
    return this.ops.project;
  }

  requireWorkspace(command: string): string {
    const project = this.ops.project;
    if (project === undefined) {
      throw new ScError('SC_WORKSPACE_REQUIRED', `${command} needs the project: --project DIR (or --workspace DIR), e.g. shadowcode --project /path/to/project ${command}`);
    }
    return project;
  }

  policy(): Policy {
    return this.ops.policy;
  }

  /** Who the CLI user is in audit rows and decisions: `cli` (or a host's name, see the constructor). */
  get owner(): string {
    return this.ops.owner;
  }

  db(): Db {
    return this.ops.db();
  }

  secrets(): SecretStore {
    return this.ops.secrets();
  }

  gate(): GateEnv {
    return this.ops.gate;
  }

  /** The home folders of the user at this terminal (their HOME and their account's), for the gate's project.holds_home. */
  homes(): readonly string[] {
    return this.ops.homes;
  }

  /** A CLI request: the person at the terminal, acting on the selected project (if any). */
  request(action: string, extra: Partial<Omit<GateRequest, 'action' | 'principal' | 'project'>> = {}): GateRequest {
    return this.ops.request(action, extra);
  }

  close(): void {
    this.ops.close();
  }
}
