/*
 * One tool call, from arguments to result.
 *
 *   name ─► tool ─► arguments vs schemas/tools/<name> ─► operation slot (≤ 8, 45 s)
 *        ─► gate.enforce(action, resource, masked args) ─► tool.run(ticket)
 *        ─► result under the 2 MB cap, or a tool error naming the code and rule
 *
 * Over HTTP the gateway decides the call together with its HTTP request
 * (prepareCall, then gate.admit) and hands the admission in: the tool then runs
 * with exactly the arguments that were decided and recorded, not a re-parse.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ScError } from '../errors.js';
import { type Admission, enforce, type PendingRequest } from '../policy/gate.js';
import { checkToolArgs } from '../schema/validate.js';
import type { Connection } from './connection.js';
import { dataResult, errorResult } from './result.js';
import { TOOLS } from './tools/index.js';
import type { ToolDef } from './tools/types.js';

/** A call checked and ready for the gate. */
export interface PreparedCall {
  readonly name: string;
  readonly def: ToolDef;
  readonly args: Record<string, unknown>;
  readonly request: PendingRequest;
}

/** A prepared call with its decision, recorded before the call reaches the SDK. */
export interface AdmittedCall {
  readonly call: PreparedCall;
  readonly admission: Admission;
}

/** Checks name and arguments and builds the gate request; throws what the call would fail with. */
export function prepareCall(conn: Connection, name: string, rawArgs: unknown): PreparedCall {
  const def = TOOLS.get(name);
  if (!def) throw new ScError('SC_TOOL_UNKNOWN', `no tool named ${JSON.stringify(name.slice(0, 128))}; tools/list shows what exists`);
  const args = checkToolArgs<Record<string, unknown>>(name, rawArgs ?? {});
  const resource = def.resource?.(conn, args);
  const level = def.requestedLevel?.(args);
  return { name, def, args, request: conn.request(def.action(args), { args, ...(resource ? { resource } : {}), ...(level ? { requested_level: level } : {}) }) };
}

export async function callTool(conn: Connection, name: string, rawArgs: unknown, signal?: AbortSignal, admitted?: AdmittedCall): Promise<CallToolResult> {
  const limits = conn.engine.policy.limits;
  try {
    let data: unknown;
    if (admitted && admitted.call.name === name) {
      const { call, admission } = admitted;
      data = await conn.ops.run(signal, async (sig) => {
        if (admission.denied) throw admission.denied;
        return call.def.run(conn, call.args, admission.ticket, sig, admission.request);
      });
    } else {
      const call = prepareCall(conn, name, rawArgs);
      data = await conn.ops.run(signal, (sig) => enforce(conn.gate(), call.request, (ticket, req) => call.def.run(conn, call.args, ticket, sig, req)));
    }
    return dataResult(data, limits.stdio_server.result_bytes, limits.audit.string_chars);
  } catch (err) {
    return errorResult(err, limits.audit.string_chars);
  }
}
