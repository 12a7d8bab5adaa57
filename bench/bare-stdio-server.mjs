// The baseline: a minimal MCP server on the bare SDK v2, serving one tool over
// stdio the way the SDK's own examples do. bench/stdio.mjs races it against ours.
// It answers the bytes ours answered (BENCH_STATUS_FILE, written by the bench from
// our own shadow_status result), so a ratio measures overhead, not payload.
import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const status = process.env.BENCH_STATUS_FILE ? JSON.parse(readFileSync(process.env.BENCH_STATUS_FILE, 'utf8')) : { project: { path: process.cwd(), trusted: false, level: 'read_only' }, engine: { mode: 'bare' } };
serveStdio(
  () => {
    const s = new McpServer({ name: 'bare', version: '1.0.0' });
    s.registerTool('shadow_status', { description: 'status' }, async () => ({ content: [{ type: 'text', text: JSON.stringify(status) }], structuredContent: status }));
    return s;
  },
  { legacy: 'serve' },
);
