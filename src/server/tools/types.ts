/* What a tool module declares. The input schema comes from schemas/tools/<name>.schema.json. */
import type { GateRequest } from '../../../gen/types/gate-request.js';
import type { GateTicket, Level } from '../../ticket.js';
import type { Connection } from '../connection.js';

export interface ToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

export interface ToolDef<A = Record<string, unknown>> {
  readonly name: string;
  readonly annotations: ToolAnnotations;
  /**
   * Extra plain words for a host's keyword tool search, served as `_meta["anthropic/searchHint"]`
   * (Claude Code's ToolSearch weighs them above the description). Only where the title and
   * description alone lose to the host's own tools for what users ask; other hosts ignore it.
   */
  readonly searchHint?: string;
  /** The gate action for these arguments, e.g. `tool:shadow_memory.append`. */
  action(args: A): string;
  /** The permission level the call asks for (shadow_run's permission_level); the ticket's ceiling is at most this. */
  requestedLevel?(args: A): Level;
  /** The record the call touches, for ownership and project rules. */
  resource?(conn: Connection, args: A): GateRequest['resource'] | undefined;
  /** `request` is what the gate decided on, including the project's trust as read for this call. */
  run(conn: Connection, args: A, ticket: GateTicket, signal: AbortSignal, request: GateRequest): unknown | Promise<unknown>;
}

export const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const WRITES: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
