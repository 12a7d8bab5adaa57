// The baseline: a minimal MCP server on the bare SDK v2, serving one tool over
// stdio the way the SDK's own examples do. bench/stdio.mjs races it against ours.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const status = { project: { path: process.cwd(), trusted: false, level: 'read_only' }, engine: { mode: 'bare' } };
serveStdio(
  () => {
    const s = new McpServer({ name: 'bare', version: '1.0.0' });
    s.registerTool('shadow_status', { description: 'status' }, async () => ({ content: [{ type: 'text', text: JSON.stringify(status) }], structuredContent: status }));
    return s;
  },
  { legacy: 'serve' },
);
