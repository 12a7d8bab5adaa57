// The HTTP baseline: the bare SDK v2 handler on node:http (toNodeHandler), one
// tool, no guards. Prints its port on stderr. bench/http.mjs races it against ours.
// It answers the bytes ours answered (BENCH_STATUS_FILE, written by the bench from
// our own shadow_status result), so a ratio measures overhead, not payload.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';

const status = process.env.BENCH_STATUS_FILE ? JSON.parse(readFileSync(process.env.BENCH_STATUS_FILE, 'utf8')) : { project: { path: process.cwd(), trusted: false, level: 'read_only' }, engine: { mode: 'bare' } };
const handler = createMcpHandler(() => {
  const s = new McpServer({ name: 'bare', version: '1.0.0' });
  s.registerTool('shadow_status', { description: 'status' }, async () => ({ content: [{ type: 'text', text: JSON.stringify(status) }], structuredContent: status }));
  return s;
}, { legacy: 'stateless', responseMode: 'json' });
const node = toNodeHandler(handler);
const server = createServer((req, res) => void node(req, res));
server.listen(0, '127.0.0.1', () => process.stderr.write(`bare ready at http://127.0.0.1:${server.address().port}/mcp\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
