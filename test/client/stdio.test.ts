// The stdio client against real subprocess peers: server-everything and hostile fixtures,
// each connection opened through the gate, and the process table checked after every exit.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openTarget } from '../../src/client/open.js';
import { enabledTargets } from '../../src/client/targets.js';
import { activeConnections } from '../../src/client/connection.js';
import type { StdioTransport } from '../../src/client/stdio.js';
import type { GateRequest } from '../../src/policy/gate.js';
import { alive, until } from '../fixtures/env.js';
import { type ClientWorld, EVERYTHING, grant as enable, peerDef, peerProcesses, processesWith, world } from '../fixtures/mcp-client.js';

const request = (w: ClientWorld): Omit<GateRequest, 'action' | 'resource' | 'args'> => ({
  principal: { kind: 'engine', owner: 'test:owner', allow_write: true, allow_approvals: false },
  project: { path: w.sb.project, trusted: true, level: 'workspace', network: false },
  requested_level: 'workspace',
});

// These tests drive the connection layer themselves: the grant is made without the review at
// mcp enable (which would start the server first), and open() reads as a review, so a first read pins.
const grant = (w: ClientWorld, name: string, def: Record<string, unknown>) => enable(w, name, def, { review: false });

async function open(w: ClientWorld, name: string) {
  const target = enabledTargets(w.db, w.sb.project, w.policy, w.secrets).find((x) => x.def.name === name);
  if (!target) throw new Error(`no target ${name}`);
  return openTarget(w.deps, request(w), w.sb.project, target, new AbortController().signal, true);
}

async function refusal(w: ClientWorld, name: string): Promise<{ code: string; message: string }> {
  try {
    const o = await open(w, name);
    await o.conn.close();
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('the connection was not refused');
}

t.afterEach(() => t.equal(activeConnections(), 0, 'every connection permit is back'));

t.test('server-everything over stdio: initialize, discovery, a call with real output, cleanup leaves no process', async (t) => {
  const w = await world();
  const marker = `stdio-everything-${process.pid}`;
  await grant(w, 'everything', { command: [process.execPath, EVERYTHING, 'stdio', marker], timeout_sec: 30 });
  const o = await open(w, 'everything');
  t.teardown(() => o.conn.close());
  t.ok(o.catalog.some((x) => x.name === 'echo'), 'echo is in the catalog');
  t.equal(o.pin, 'pinned', 'the first catalog is pinned with the grant');
  t.match(o.catalog_hash, /^[0-9a-f]{64}$/);
  const res = await o.conn.call(await ticketFor(w), 'echo', { message: 'hello relay' }, new AbortController().signal);
  t.match(JSON.stringify(res.content), /hello relay/);
  const report = await o.conn.close();
  t.match(report.outcome, /^(exited|terminated|killed)$/);
  t.same(processesWith(marker), [], 'nothing of the connection is left in the process table');
});

async function ticketFor(w: ClientWorld) {
  const { enforce } = await import('../../src/policy/gate.js');
  return enforce(w.gateEnv, { ...request(w), action: 'mcp:call', resource: { kind: 'mcp_tool', id: 'x' } }, (tk) => tk);
}

t.test('a second connection with the same catalog matches the pin', async (t) => {
  const w = await world();
  await grant(w, 'peer', peerDef('ok'));
  const a = await open(w, 'peer');
  await a.conn.close();
  const b = await open(w, 'peer');
  await b.conn.close();
  t.equal(b.pin, 'match');
  t.equal(b.catalog_hash, a.catalog_hash);
});

t.test('hostile peers fail the connection with a stable code and leave no process', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['flood', 'SC_MCP_PROTOCOL', /flood/],
    ['oversized', 'SC_MCP_PROTOCOL', /oversized/],
    ['truncated', 'SC_MCP_', /truncated|not valid JSON|closed|connection/i],
    ['dup', 'SC_MCP_CATALOG_INVALID', /twice/],
    ['cursor-loop', 'SC_MCP_CATALOG_INVALID', /repeated a cursor/],
    ['pages', 'SC_MCP_CATALOG_INVALID', /more than 8 pages/],
    ['many-tools', 'SC_MCP_CATALOG_INVALID', /more than 128 tools/],
    ['long-cursor', 'SC_MCP_CATALOG_INVALID', /cursor longer than 4096/],
    ['big-catalog', 'SC_MCP_CATALOG_INVALID', /larger than 2097152/],
  ];
  for (const [mode, code, msg] of cases) {
    const w = await world();
    await grant(w, `h-${mode}`, peerDef(mode));
    const e = await refusal(w, `h-${mode}`);
    t.match(e.code, code, `${mode}: ${e.message}`);
    t.match(e.message, msg, `${mode}: the reason is named`);
    t.same(peerProcesses(mode), [], `${mode}: no process left`);
  }
});

t.test('a discovery that never answers times out within timeout_sec', async (t) => {
  const w = await world();
  await grant(w, 'slow', peerDef('slow', { timeout_sec: 1 }));
  const e = await refusal(w, 'slow');
  t.equal(e.code, 'SC_TIMEOUT', e.message);
  t.same(peerProcesses('slow'), []);
});

t.test('a server whose grandchild ignores TERM: the group is killed after the grace, nothing is left', async (t) => {
  const w = await world();
  const marker = `stdio-${process.pid}`;
  await grant(w, 'stubborn', peerDef('fork-ignore-term', {}, [marker]));
  const o = await open(w, 'stubborn');
  await until(() => processesWith(`MCP-PEER-GRANDCHILD ${marker}`).length > 0);
  const report = await o.conn.close();
  t.equal(report.outcome, 'killed', `TERM was not enough; the group got KILL (${JSON.stringify(report)})`);
  t.same(processesWith(`MCP-PEER-GRANDCHILD ${marker}`), [], 'the grandchild is gone');
  t.same(processesWith(`mcp-peer.mjs fork-ignore-term ${marker}`), [], 'the leader is gone');
});

t.test('a stderr flood is drained and capped; the connection keeps working', async (t) => {
  const w = await world();
  await grant(w, 'noisy', peerDef('stderr-flood'));
  const o = await open(w, 'noisy');
  // Had we stopped reading, the server would block once its stderr pipe (64 KiB) filled:
  // wait until far more than that has gone through the 16 KiB capture.
  const ring = (o.conn as unknown as { transport: StdioTransport }).transport.stderr;
  await until(() => ring.droppedBytes > 1024 * 1024);
  t.ok(ring.heldBytes <= w.policy.limits.stdio_client.stderr_capture_bytes, 'the capture keeps only its cap');
  const res = await o.conn.call(await ticketFor(w), 'echo', { text: 'still here' }, new AbortController().signal);
  t.match(JSON.stringify(res), /still here/);
  await o.conn.close();
  t.same(peerProcesses('stderr-flood'), []);
});

t.test('unsolicited sampling is refused and elicitation declined; the call still answers', async (t) => {
  const w = await world();
  await grant(w, 'sampler', peerDef('sampling'));
  await grant(w, 'elicitor', peerDef('elicit'));
  for (const [name, key] of [['sampler', 'refused'], ['elicitor', 'declined']] as const) {
    const o = await open(w, name);
    const res = await o.conn.call(await ticketFor(w), 'echo', { text: 'x' }, new AbortController().signal);
    t.match(JSON.stringify(res), /echo: x/);
    const report = await o.conn.close();
    t.equal(report.peer[key], 1, `${name}: the server's request was ${key}`);
  }
});

t.test('a tool error result passes through unchanged, never retried', async (t) => {
  const w = await world();
  await grant(w, 'peer', peerDef('ok'));
  const o = await open(w, 'peer');
  t.teardown(() => o.conn.close());
  const res = await o.conn.call(await ticketFor(w), 'echo', { text: 'fail' }, new AbortController().signal);
  t.same(res, { isError: true, content: [{ type: 'text', text: 'it failed' }], structuredContent: { why: 'asked' } });
});

t.test('the child gets the sanitized env plus resolved env_refs; provider keys and loader overrides do not pass', async (t) => {
  const w = await world();
  w.env.OPENAI_API_KEY = 'sk-provider-canary-123456';
  w.env.NODE_OPTIONS = '--require /nonexistent';
  w.env.LD_PRELOAD = '/nonexistent.so';
  w.env.REF_SOURCE = 'canary-from-env-987654';
  await grant(w, 'envy', peerDef('ok', { env_refs: { GIVEN: 'REF_SOURCE' } }));
  const o = await open(w, 'envy');
  t.teardown(() => o.conn.close());
  const get = async (name: string) => JSON.stringify((await o.conn.call(await ticketFor(w), 'env', { name }, new AbortController().signal)).content);
  t.match(await get('GIVEN'), /canary-from-env-987654/, 'the reference resolved at connect');
  for (const n of ['OPENAI_API_KEY', 'LD_PRELOAD', 'SHADOWCODE_HOME']) t.match(await get(n), /\(unset\)/, `${n} is not inherited`);
  // tap's process-info hook adds its own NODE_OPTIONS to every node child it sees spawned; ours must not pass.
  t.notMatch(await get('NODE_OPTIONS'), /nonexistent/, 'NODE_OPTIONS is not inherited');
});

t.test('a definition that sets a loader override is refused before anything starts', async (t) => {
  const w = await world();
  await grant(w, 'loader', peerDef('ok', { env: { LD_PRELOAD: '/x.so' } }));
  const e = await refusal(w, 'loader');
  t.equal(e.code, 'SC_DEF_REFUSED');
  t.same(peerProcesses('ok'), []);
});

t.test('a server that exits on its own: the call fails, the permit is released', async (t) => {
  const w = await world();
  await grant(w, 'quitter', peerDef('exit-early'));
  const o = await open(w, 'quitter');
  await until(() => peerProcesses('exit-early').length === 0);
  await t.rejects(o.conn.call(await ticketFor(w), 'echo', { text: 'x' }, new AbortController().signal), { code: /SC_MCP_/ });
  await o.conn.close();
  t.same(peerProcesses('exit-early'), []);
  t.notOk(alive(process.pid) === false);
});

t.test('a call cancelled while the server works fails as cancelled; the server is told and the connection still answers', async (t) => {
  const w = await world();
  // Inside the project: the server runs sandboxed and can write only there.
  const log = join(w.sb.project, 'peer.log');
  await grant(w, 'peer', peerDef('ok', { env: { PEER_LOG: log } }));
  const o = await open(w, 'peer');
  t.teardown(() => o.conn.close());
  const ac = new AbortController();
  const pending = o.conn.call(await ticketFor(w), 'echo', { text: 'hang' }, ac.signal);
  setTimeout(() => ac.abort(), 100);
  await t.rejects(pending, { code: 'SC_CANCELLED' });
  const next = await o.conn.call(await ticketFor(w), 'echo', { text: 'after' }, new AbortController().signal);
  t.match(JSON.stringify(next.content), /echo: after/);
  await o.conn.close();
  t.match(readFileSync(log, 'utf8'), /notifications\/cancelled/, 'the server got notifications/cancelled');
});

/** The same world with some stdio_client limits lowered, so a cap is reached with a few small peers. */
function lowered(w: ClientWorld, patch: Partial<ClientWorld['policy']['limits']['stdio_client']>): ClientWorld {
  const policy = { ...w.policy, limits: { ...w.policy.limits, stdio_client: { ...w.policy.limits.stdio_client, ...patch } } };
  const gateEnv = { policy, db: () => w.db };
  return { ...w, policy, gateEnv, deps: { ...w.deps, policy, gateEnv } };
}

t.test('past connections_per_process a new connection is refused before anything starts; a closed one frees its place', async (t) => {
  const w = lowered(await world(), { connections_per_process: 2 });
  const marker = `cap-${process.pid}`;
  for (const n of ['a', 'b', 'c']) await grant(w, n, peerDef('ok', {}, [`${marker}-${n}`]));
  const a = await open(w, 'a');
  const b = await open(w, 'b');
  const e = await refusal(w, 'c');
  t.equal(e.code, 'SC_LIMIT_REACHED');
  t.match(e.message, /already holds 2 MCP client connections/);
  t.same(processesWith(`${marker}-c`), [], 'the refused server left nothing running');
  await a.conn.close();
  const c = await open(w, 'c');
  t.ok(c.catalog.length > 0, 'with a place free, the connection opens');
  await Promise.all([b.conn.close(), c.conn.close()]);
});

t.test('past lifetime_bytes the connection fails with SC_MCP_PROTOCOL and leaves no process', async (t) => {
  const w = lowered(await world(), { lifetime_bytes: 16 * 1024 });
  const marker = `lifetime-${process.pid}`;
  await grant(w, 'chatty', peerDef('ok', {}, [marker]));
  const o = await open(w, 'chatty');
  await t.rejects(o.conn.call(await ticketFor(w), 'echo', { text: 'x'.repeat(20 * 1024) }, new AbortController().signal), { code: 'SC_MCP_PROTOCOL', message: /more than 16384 bytes received/ });
  await o.conn.close();
  t.same(processesWith(marker), []);
});
