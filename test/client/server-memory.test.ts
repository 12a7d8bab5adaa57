// The real server-memory (@modelcontextprotocol/server-memory, a development dependency) as a
// stdio server in the sandbox: with its definition declaring sandbox.write for its folder, what a
// task's approved call stores is in its file afterwards, outside the sandbox; with its file in the
// home and nothing declared, the call succeeds but the data cannot survive, and the task is told:
// an `mcp.discarded` event names the file when the server ends. Never silently lost.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { activeConnections } from '../../src/client/connection.js';
import { openTaskTools } from '../../src/client/task-tools.js';
import { ROOT } from '../fixtures/env.js';
import { type ClientWorld, grant, taskCtx, world } from '../fixtures/mcp-client.js';

t.afterEach(() => t.equal(activeConnections(), 0, 'every connection permit is back'));

const MEMORY = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const def = (file: string, sandbox?: Record<string, unknown>) => ({ command: [process.execPath, MEMORY], env: { MEMORY_FILE_PATH: file }, timeout_sec: 20, ...(sandbox ? { sandbox } : {}) });
const entity = { entities: [{ name: 'shadowcode', entityType: 'project', observations: ['keeps its file'] }] };

const source = (w: ClientWorld, ctx: ReturnType<typeof taskCtx>) => {
  const s = openTaskTools(w.deps, ctx);
  if (!s) throw new Error('no tool source for a build task');
  return s;
};

t.test('server-memory whose definition declares sandbox.write keeps its file after a task\'s approved call', async (t) => {
  const w = await world();
  const store = join(w.sb.root, 'memdata');
  mkdirSync(store);
  const file = join(store, 'memory.jsonl');
  await grant(w, 'memory', def(file, { write: ['~/memdata'] }));
  const ctx = taskCtx(w);
  const s = source(w, ctx);
  const r = await s.call('mcp__memory__create_entities', entity, ctx);
  t.equal(r.is_error, false, r.content);
  t.match(ctx.approvals, [{ kind: 'mcp', action: { server: 'project:.shadowcode/mcp/memory.json', tool: 'create_entities' } }], 'the call was approved first');
  await s.close();
  t.match(readFileSync(file, 'utf8'), /"name":"shadowcode".*"keeps its file"/, 'the entity is in its file, outside the sandbox');
  t.notOk(ctx.events.some((e) => e.kind === 'mcp.discarded'), 'nothing was lost');
});

t.test('server-memory keeping its file in the home with nothing declared: the call succeeds, the file cannot survive, and the task is told', async (t) => {
  const w = await world();
  const file = join(w.sb.root, 'memory.jsonl');
  await grant(w, 'memory', def(file));
  const ctx = taskCtx(w);
  const s = source(w, ctx);
  const r = await s.call('mcp__memory__create_entities', entity, ctx);
  t.equal(r.is_error, false, r.content);
  await s.close();
  t.notOk(existsSync(file), 'nothing reached the disk: the home inside was its own');
  const lost = ctx.events.find((e) => e.kind === 'mcp.discarded');
  t.match(lost?.body, { definition: 'project:.shadowcode/mcp/memory.json', count: 1, paths: [file] });
  t.match(lost?.body.notice, `The server project:.shadowcode/mcp/memory.json wrote 1 file in its private home or /tmp, which the sandbox discarded when it ended: ${file}`);
  t.match(lost?.body.notice, "a server: its definition's sandbox.write");
});
