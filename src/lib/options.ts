/*
 * What a host passes to open() (checked in check.ts before anything is opened, then frozen).
 *
 *   profile    an absolute directory (created 0700 on first use, refused if others can read it)
 *   project    an absolute path to an existing directory, resolved to its real path once
 *              (`workspace`, its older name, is the same option; give one of them)
 *   policyDir  optional; another policy directory, validated against our schemas like ours
 *   env        the environment jobs and servers start from; nothing is read from
 *              process.env unless the host passes it here
 *   name       how the host's decisions are audited: `host:NAME`
 *
 * Nothing here can widen the policy: there is no option that turns off the gate, a
 * check or a limit. A host that wants other limits ships its own policy directory.
 */
import type { Readable, Writable } from 'node:stream';
import type { ApprovalRow } from '../engine/job-types.js';

/** A pending approval exactly as `shadowcode approvals --json` and the terminal show it. */
export type Approval = ApprovalRow & { readonly owner: string };

export type Decision = 'approve' | 'deny';

/** Called once for each approval that becomes pending; undefined leaves it for the other surfaces. */
export type ApprovalHandler = (approval: Approval) => Decision | undefined | Promise<Decision | undefined>;

/** The project, absolute and existing: `project`, or `workspace`, its older name (accepted for good), not both. */
export type ProjectOption = { readonly project: string; readonly workspace?: undefined } | { readonly workspace: string; readonly project?: undefined };

export type OpenOptions = ProjectOption & CommonOpenOptions;

export interface CommonOpenOptions {
  /** The profile directory, absolute. */
  readonly profile: string;
  /** A policy directory to use instead of the shipped one; validated like ours. */
  readonly policyDir?: string;
  /** The environment jobs, tasks and servers start from (filtered by the policy as always). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** How the host's decisions appear in the audit log (`host:NAME`); letters, digits, `-` and `_`. */
  readonly name?: string;
  /** Decides approvals as they appear; see ApprovalHandler. */
  readonly onApproval?: ApprovalHandler;
  /** Where diagnostic lines go (a server's start, a handler that threw); default: nowhere. */
  readonly log?: (line: string) => void;
}

export interface StdioServeOptions {
  /** Newline-delimited JSON-RPC from the client. */
  readonly input: Readable;
  /** Where answers go; nothing else is written to it. */
  readonly output: Writable;
  readonly allowWrite?: boolean;
  readonly allowApprovals?: boolean;
}

export interface HttpServeOptions {
  /** A loopback IP: 127.0.0.1 (default) or ::1. */
  readonly host?: string;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** The bearer token, as a value: 32–512 bearer-token characters. */
  readonly token: string;
  /** Host names a TLS reverse proxy on this machine forwards with. */
  readonly allowedHosts?: readonly string[];
  readonly allowWrite?: boolean;
  readonly allowApprovals?: boolean;
}

export interface ServerHandle {
  readonly kind: 'stdio' | 'http';
  /** The owner label its jobs are recorded under. */
  readonly owner: string;
  /** Settles when the server has ended and cleaned up (close(), or the client going away). */
  readonly closed: Promise<void>;
  /** Ends the server as SIGTERM ends `mcp serve`: its owned jobs are cancelled and reaped. */
  close(): Promise<void>;
}
