/*
 * What a client learns before it calls anything: the server's name, capabilities
 * and instructions, and the tool list. Kept apart from the SDK (build.ts) so the
 * first answers over stdio (stdio-first.ts) need none of it loaded.
 *
 * tools/list serves each tool's host-safe input schema, derived once per process
 * from schemas/tools/ (src/schema/host-schema.ts); calls are still validated
 * against the full schema.
 */
import { TOOL_SCHEMAS } from '../../gen/tools/catalog.js';
import { hostInputSchema } from '../schema/host-schema.js';
import { VERSION } from '../version.js';
import { TOOLS } from './tools/index.js';
import type { ToolAnnotations } from './tools/types.js';

// Hosts that defer tools (Claude Code's ToolSearch, Codex's tool_search) show the model these
// words before any tool: they name the tools to load first.
export const INSTRUCTIONS =
  "shadowcode is a gateway to one project. Load shadow_status first: it says whether this connection may change anything. Then shadow_understand describes the project, shadow_run delegates a coding task to the engine's agent, shadow_test runs the project's tests, and shadow_jobs follows either. Denied calls come back as tool errors naming the policy rule.";

export const SERVER_INFO = { name: 'shadowcode', version: VERSION } as const;

/** A fresh object each time: the SDK keeps (and may merge into) what it is given. */
export const capabilities = () => ({ tools: { listChanged: false }, resources: {}, prompts: {} });

export type ListedTool = { name: string; title: string; description: string; inputSchema: { type: 'object' } & Record<string, unknown>; annotations: ToolAnnotations; _meta?: Record<string, string> };
let listed: readonly ListedTool[] | undefined;

/** Built on first use and kept: the HTTP gateway builds a server per request. */
export function toolList(): readonly ListedTool[] {
  return (listed ??= Object.freeze(
    [...TOOLS.values()].map((t) => {
      const schema = TOOL_SCHEMAS[t.name as keyof typeof TOOL_SCHEMAS];
      const inputSchema = hostInputSchema(t.name, schema) as ListedTool['inputSchema'];
      const meta = t.searchHint ? { _meta: { 'anthropic/searchHint': t.searchHint } } : {};
      return { name: t.name, title: schema.title, description: schema.description, inputSchema, annotations: t.annotations, ...meta };
    }),
  ));
}
