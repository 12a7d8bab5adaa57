/*
 * One tool call, from arguments to result.
 *
 *   name ─► tool ─► arguments vs schemas/tools/<name> ─► operation slot (≤ 8, 45 s)
 *        ─► gate.enforce(action, resource, masked args) ─► tool.run(ticket)
 *        ─► result under the 2 MB cap, or a tool error naming the code and rule
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { checkToolArgs } from '../schema/validate.js';
import type { Connection } from './connection.js';
import { dataResult, errorResult } from './result.js';
import { TOOLS } from './tools/index.js';

export async function callTool(conn: Connection, name: string, rawArgs: unknown, signal?: AbortSignal): Promise<CallToolResult> {
  const cap = conn.engine.policy.limits.stdio_server.result_bytes;
  try {
    const def = TOOLS.get(name);
    if (!def) throw new ScError('SC_TOOL_UNKNOWN', `no tool named ${JSON.stringify(name.slice(0, 128))}; tools/list shows what exists`);
    const args = checkToolArgs<Record<string, unknown>>(name, rawArgs ?? {});
    const data = await conn.ops.run(signal, async (sig) => {
      const resource = def.resource?.(conn, args);
      const level = def.requestedLevel?.(args);
      const req = conn.request(def.action(args), { args, ...(resource ? { resource } : {}), ...(level ? { requested_level: level } : {}) });
      return enforce(conn.gate(), req, (ticket) => def.run(conn, args, ticket, sig, req));
    });
    return dataResult(data, cap, conn.engine.policy.limits.audit.string_chars);
  } catch (err) {
    return errorResult(err, conn.engine.policy.limits.audit.string_chars);
  }
}
