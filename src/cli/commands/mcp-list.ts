/* shadowcode mcp list: the same view as `mcp`, under the name other groups use. */
import { command as mcp } from './mcp.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  ...mcp,
  name: 'mcp list',
  summary: "Show the external MCP servers and their grants (the same as mcp)",
  examples: ['shadowcode --project ~/src/app mcp list'],
};
