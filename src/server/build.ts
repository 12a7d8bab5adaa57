/*
 * The MCP server for one connection (or for one HTTP request, with only the handler of
 * its message's method): the official SDK's low-level Server with our handlers. What it lists (tools, instructions, capabilities) is listing.ts's,
 * shared with the first answers over stdio. Every call and read is dispatched
 * through the gate. With telemetry on, each request runs in its MCP SERVER span
 * (traced): the caller's params._meta.traceparent is its parent.
 */
import { ProtocolError, ProtocolErrorCode, Server, type Transport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { asScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { tel } from '../telemetry/hooks.js';
import type { Connection } from './connection.js';
import { type AdmittedCall, callTool } from './dispatch.js';
import { capabilities, INSTRUCTIONS, type ListedTool, SERVER_INFO, toolList } from './listing.js';
import { ANY_PARAMS, promptParams, resourceParams } from './params.js';
import { PROMPTS } from './prompts.js';
import { RESOURCES, readResource } from './resources.js';

function protocolError(err: unknown): ProtocolError {
  const e = asScError(err);
  const code = e.code === 'SC_TOOL_UNKNOWN' || e.code === 'SC_TOOL_ARGS_INVALID' ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError;
  return new ProtocolError(code, `${e.code}: ${e.message}`, e.toJSON().error);
}

interface RequestCtx {
  readonly mcpReq: { readonly method: string; readonly id: string | number; readonly _meta?: unknown; readonly envelope?: { readonly protocolVersion?: string } };
}

/** Runs a handler in its MCP SERVER span when telemetry is on; otherwise just runs it. */
function traced<T>(conn: Connection, server: Server, ctx: RequestCtx, target: string | undefined, args: unknown, fn: () => T | Promise<T>): Promise<T> {
  const t = tel();
  if (!t) return Promise.resolve(fn());
  const protocolVersion = ctx.mcpReq.envelope?.protocolVersion ?? server.getNegotiatedProtocolVersion();
  return t.mcpRequest({ method: ctx.mcpReq.method, target, id: ctx.mcpReq.id, meta: ctx.mcpReq._meta, protocolVersion, transport: conn.opts.transport === 'stdio' ? 'pipe' : 'tcp', args }, async () => fn());
}

/** The methods this server answers, each with how its handler is set on a server. */
const HANDLERS: Record<string, (server: Server, conn: Connection, admitted: AdmittedCall | undefined) => void> = {
  'tools/list': (server, conn) => {
    const tools = toolList();
    server.setRequestHandler('tools/list', (_req, ctx) => traced(conn, server, ctx, undefined, undefined, () => ({ tools: tools as ListedTool[] })));
  },
  'tools/call': (server, conn, admitted) =>
    server.setRequestHandler('tools/call', (req, ctx) => traced(conn, server, ctx, req.params.name, req.params.arguments, () => callTool(conn, req.params.name, req.params.arguments, ctx.mcpReq.signal, admitted))),
  'resources/list': (server, conn) =>
    server.setRequestHandler('resources/list', (_req, ctx) =>
      traced(conn, server, ctx, undefined, undefined, () => ({
        resources: RESOURCES.map((r) => ({ uri: r.uri, name: r.name, description: r.description, mimeType: 'application/json' })),
      })),
    ),
  'resources/templates/list': (server) => server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: [] })),
  // Our own params check (src/server/params.ts): a malformed read is -32602 with our message.
  'resources/read': (server, conn) =>
    server.setRequestHandler('resources/read', { params: ANY_PARAMS }, (params, ctx) =>
      traced(conn, server, ctx, undefined, undefined, async () => {
        try {
          return { contents: [await readResource(conn, resourceParams(params).uri, ctx.mcpReq.signal)] };
        } catch (err) {
          throw protocolError(err);
        }
      }),
    ),
  'prompts/list': (server) => server.setRequestHandler('prompts/list', () => ({ prompts: PROMPTS.map((p) => ({ name: p.name, description: p.description, arguments: [...p.arguments] })) })),
  'prompts/get': (server, conn) =>
    server.setRequestHandler('prompts/get', { params: ANY_PARAMS }, (params, ctx) => {
      // Only a name we serve goes into the span's name: a client's made-up one would be unbounded.
      const known = PROMPTS.find((p) => p.name === params.name)?.name;
      return traced(conn, server, ctx, known, undefined, () => getPrompt(conn, params));
    }),
};

/**
 * The server for a connection (every handler), or for one HTTP request whose single message
 * is known to be `method`: then only that method's handler is set, because the server
 * answers that one message and is dropped (the others cost about 5 µs a request to set up,
 * and 7–9 µs paced). A method we do not serve gets every handler, so the SDK answers it as
 * it always did.
 */
export function buildServer(conn: Connection, admitted?: AdmittedCall, method?: string): Server {
  const server = new Server({ ...SERVER_INFO }, { capabilities: capabilities(), instructions: INSTRUCTIONS });
  const only = method !== undefined && Object.hasOwn(HANDLERS, method) ? HANDLERS[method] : undefined;
  if (only) only(server, conn, admitted);
  else for (const set of Object.values(HANDLERS)) set(server, conn, admitted);
  return server;
}

async function getPrompt(conn: Connection, params: Parameters<typeof promptParams>[0]) {
  try {
    const { prompt: p, arguments: args } = promptParams(params, PROMPTS);
    const text = await enforce(conn.gate(), conn.request(`prompt:${p.name}`, { args }), () => p.render(conn.project, args));
    return { description: p.description, messages: [{ role: 'user' as const, content: { type: 'text' as const, text } }] };
  } catch (err) {
    throw protocolError(err);
  }
}

/** `mcp serve` over stdio on the SDK: one server for the connection, on `wire` (src/server/stdio.ts). */
export function serveConnection(conn: Connection, wire: Transport, log: (line: string) => void): { close(): Promise<void> } {
  return serveStdio(() => buildServer(conn), { legacy: 'serve', transport: wire, onerror: (e) => log(`shadowcode: ${e.message}`) });
}
