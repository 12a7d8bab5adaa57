/*
 * The MCP server a coding CLI starts instead of a granted server: a stdio
 * server of ours that holds no command, URL or credential of the real one and
 * can only ask the engine's relay host (relay-host.ts) over the run's socket.
 *
 *   argv: --server NAME   env: SHADOWCODE_RELAY_SOCKET, SHADOWCODE_RELAY_TOKEN
 *   socket ─► {token, server} ─► {ok, tools | error}
 *   stdin (newline JSON-RPC from the CLI):
 *     initialize ─► our capabilities (tools only)     ping ─► {}
 *     tools/list ─► the pinned tools the host sent     tools/call ─► {id, tool, arguments}
 *       to the host, which waits for the user's approval ─► {content: text, isError}
 *     anything else with an id ─► method not found;  notifications ─► ignored
 *   the socket closing (the run ended) or stdin ending ─► exit
 *
 * Started only as a child program (the CLI spawns it from the config we wrote).
 */
import { connect } from 'node:net';

const PROTOCOLS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
// A line from the CLI past this is not a call we relay: the host's own cap on arguments is smaller.
const MAX_LINE = 8 * 1024 * 1024;

const argv = process.argv.slice(2);
const serverName = argv[argv.indexOf('--server') + 1] ?? '';
const socketPath = process.env.SHADOWCODE_RELAY_SOCKET ?? '';
const token = process.env.SHADOWCODE_RELAY_TOKEN ?? '';

interface Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const out = (m: unknown): void => {
  process.stdout.write(`${JSON.stringify(m)}\n`);
};
process.stdout.on('error', () => process.exit(0));

let failure: string | null = null;
const pending = new Map<number, (r: { content: string; is_error: boolean }) => void>();
let seq = 0;

const host = connect(socketPath);
host.setEncoding('utf8');
host.on('error', (err) => {
  failure ??= `the shadowcode relay is not reachable: ${err.message}`;
});
host.on('close', () => {
  // The run is over (or the host refused us): nothing more can be approved, so nothing more is relayed.
  for (const answer of pending.values()) answer({ content: 'SC_CANCELLED: the shadowcode task ended; nothing was sent', is_error: true });
  // The answers above are written from promise callbacks: let them run first.
  setImmediate(() => process.exit(0));
});
const catalog = new Promise<Tool[]>((resolve) => {
  let buf = '';
  let first = true;
  host.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const m = JSON.parse(buf.slice(0, nl)) as { ok?: boolean; tools?: Tool[]; error?: string; id?: number; content?: string; is_error?: boolean };
      buf = buf.slice(nl + 1);
      if (first) {
        first = false;
        if (m.ok) resolve(m.tools ?? []);
        else {
          failure = m.error ?? 'the shadowcode relay refused this server';
          process.stderr.write(`shadowcode relay: ${failure}\n`);
          resolve([]);
        }
      } else if (typeof m.id === 'number') {
        pending.get(m.id)?.({ content: String(m.content ?? ''), is_error: m.is_error === true });
        pending.delete(m.id);
      }
    }
  });
  host.on('close', () => resolve([]));
});
host.write(`${JSON.stringify({ token, server: serverName })}\n`);

async function handle(m: Record<string, unknown>): Promise<void> {
  const id = m.id;
  const method = m.method;
  if (typeof method !== 'string' || id === undefined) return;
  const params = (m.params ?? {}) as Record<string, unknown>;
  if (method === 'initialize') {
    const asked = String(params.protocolVersion ?? '');
    return out({ jsonrpc: '2.0', id, result: { protocolVersion: PROTOCOLS.includes(asked) ? asked : PROTOCOLS[0], capabilities: { tools: { listChanged: false } }, serverInfo: { name: 'shadowcode-relay', version: '1' }, instructions: `Tools of the MCP server "${serverName}", relayed by shadowcode: each call waits for the user's approval in shadowcode.` } });
  }
  if (method === 'ping') return out({ jsonrpc: '2.0', id, result: {} });
  if (method === 'tools/list') return out({ jsonrpc: '2.0', id, result: { tools: await catalog } });
  if (method === 'tools/call') {
    const tools = await catalog;
    const name = String(params.name ?? '');
    if (!tools.some((t) => t.name === name)) return out({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: failure ?? `${serverName} has no tool ${JSON.stringify(name.slice(0, 128))}; nothing was sent` }], isError: true } });
    const n = ++seq;
    const r = await new Promise<{ content: string; is_error: boolean }>((resolve) => {
      pending.set(n, resolve);
      host.write(`${JSON.stringify({ id: n, tool: name, arguments: params.arguments ?? {} })}\n`);
    });
    return out({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: r.content }], isError: r.is_error } });
  }
  out({ jsonrpc: '2.0', id, error: { code: -32601, message: `shadowcode relay does not handle ${method.slice(0, 64)}` } });
}

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  buf += chunk;
  if (buf.length > MAX_LINE && !buf.includes('\n')) process.exit(1);
  let nl: number;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    let m: unknown;
    try {
      m = JSON.parse(line);
    } catch {
      out({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
      continue;
    }
    if (m && typeof m === 'object' && !Array.isArray(m)) void handle(m as Record<string, unknown>);
  }
});
process.stdin.on('end', () => process.exit(0));
