/*
 * What a native task tool is and what it is given.
 *
 *   model's call ─► loop parses JSON args ─► schemas/agent-tools/<name> ─► gate 'task:tool.<name>'
 *   ─► tool.run(env, args, ticket) ─► ToolResult (an error names its code; the loop caps its size)
 *
 * A tool never decides whether it may run: the gate did, on the request built by
 * policy/requests.ts from the task's ceiling and the project's trust as read now (`env.trust()`).
 */
import type { GateEnv } from '../../policy/gate.js';
import type { Policy } from '../../policy/load.js';
import type { Trust } from '../../policy/requests.js';
import type { Db } from '../../store/db.js';
import type { GateTicket } from '../../ticket.js';
import type { TaskContext, ToolResult } from '../types.js';

export interface ToolEnv {
  readonly ctx: TaskContext;
  readonly policy: Policy;
  readonly db: () => Db;
  readonly gate: GateEnv;
  /** The engine's environment, filtered by policy/environment.json before a command sees it. */
  readonly env: NodeJS.ProcessEnv;
  /** The project's trust as stored now, for the gate requests the task's tools make (policy/requests.ts). */
  trust(): Trust;
}

export interface NativeTool<A = Record<string, unknown>> {
  readonly name: string;
  /** Changes the project or runs something: offered in build mode only, and the gate wants workspace level. */
  readonly writes: boolean;
  /** What the gate and the audit row see of a call (a path, an argv), never the whole content. */
  describe(args: A): Record<string, unknown>;
  run(env: ToolEnv, args: A, ticket: GateTicket): Promise<ToolResult> | ToolResult;
}

export function ok(content: string): ToolResult {
  return { content, is_error: false };
}

export function fail(code: string, message: string): ToolResult {
  return { content: `${code}: ${message}`, is_error: true };
}
