/*
 * The outbound client's own cost per tool call, against server-everything over stdio
 * (bundled and run by bench/client.mjs; not a test, no assertions).
 *
 *   relay:  gate.enforce 'mcp:call' (BEGIN IMMEDIATE, trust read, audit row, COMMIT)
 *           ─► McpConnection.call ─► PeerGuard ─► supervised stdio transport ─► echo
 *           (an approval wait, were there one, is not measured: it is the user's time)
 *   direct: the SDK v2 Client's callTool over its own StdioClientTransport ─► echo
 *
 * Both connections are open for the whole run; calls alternate which path goes first
 * and are paced under the 128-frames-per-second limit the relay enforces on the reply.
 * Each round yields one median per path and their ratio.
 */
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { connectionEnv } from '../src/client/env.js';
import { McpConnection } from '../src/client/connection.js';
import { openStdio } from '../src/client/stdio.js';
import { enforce, type GateEnv } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { randomUUID } from 'node:crypto';
import { type AuditRow, appendAuditRows } from '../src/store/audit.js';
import { openDb } from '../src/store/db.js';
import { getProject, setTrust } from '../src/store/projects.js';
import { packageRoot } from '../src/util/paths.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const pace = () => new Promise((r) => setTimeout(r, 10));

async function main() {
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'sc-bench-client-')));
  const project = join(work, 'project');
  const profile = join(work, 'profile');
  mkdirSync(project);
  mkdirSync(profile, { mode: 0o700 });
  const policy = shippedPolicy();
  const db = openDb(profile, policy.limits.cli.sqlite_busy_timeout_ms);
  await enforce({ policy, db: () => db }, { action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (t) => setTrust(t, db, project, 'workspace'));
  // The gate reads the project's trust itself, inside the transaction that records the decision.
  const gateEnv: GateEnv = {
    policy,
    db: () => db,
    project: (d) => {
      const p = getProject(d, project);
      return { path: p.path, trusted: p.trusted, level: p.level, network: p.network };
    },
  };
  const principal = { kind: 'engine', owner: 'bench:owner', allow_write: true, allow_approvals: false } as const;
  const everything = join(packageRoot(), 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const argv = [process.execPath, everything, 'stdio'];
  const lim = policy.limits;
  const id = 'bench:everything';

  const conn = await enforce(gateEnv, { action: 'mcp:connect', principal, requested_level: 'workspace', resource: { kind: 'mcp_server', id, endpoint_kind: 'loopback' }, args: { definition: id, transport: 'stdio' } }, (ticket) =>
    McpConnection.open(ticket, openStdio(ticket, { argv, cwd: project, env: connectionEnv(policy.environment, { PATH: process.env.PATH }, id, {}, {}, { reveal: () => undefined }), graceMs: lim.stdio_client.kill_grace_ms, frames: lim.stdio_client, stderrBytes: lim.stdio_client.stderr_capture_bytes, network: false, policy, db }), {
      id,
      timeoutMs: 30_000,
      catalog: lim.catalog,
      maxConnections: lim.stdio_client.connections_per_process,
      signal: new AbortController().signal,
    }),
  );
  const direct = new Client({ name: 'bench-direct', version: '1.0.0' });
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: [everything, 'stdio'], cwd: project, env: { PATH: process.env.PATH ?? '' }, stderr: 'ignore' }));

  const signal = new AbortController().signal;
  const relay = async (message: string) => {
    const args = { message };
    return enforce(gateEnv, { action: 'mcp:call', principal, requested_level: 'workspace', resource: { kind: 'mcp_tool', id: `${id}/echo` }, args: { server: id, tool: 'echo', arguments: args } }, (ticket) => conn.call(ticket, 'echo', args, signal));
  };
  const plain = (message: string) => direct.callTool({ name: 'echo', arguments: { message } });
  // BENCH_CLIENT_REUSE=1: the relay's connection path alone, on one decision made once (what the gate costs is the difference).
  let reused: Parameters<Parameters<typeof enforce>[2]>[0] | undefined;
  const connOnly = async (message: string) => {
    const args = { message };
    reused ??= await enforce(gateEnv, { action: 'mcp:call', principal, requested_level: 'workspace', resource: { kind: 'mcp_tool', id: `${id}/echo` }, args: { server: id, tool: 'echo', arguments: args } }, (t) => t);
    return conn.call(reused, 'echo', args, signal);
  };
  // BENCH_CLIENT_REUSE=floor: the floor, one decision-sized audit row committed (BEGIN IMMEDIATE … COMMIT) before each call on the reused decision.
  let row: AuditRow[] | undefined;
  const floor = async (message: string) => {
    row ??= [{ kind: 'decision', body: { decision_id: randomUUID(), action: 'mcp:call', principal, project, trust: { trusted: true, level: 'workspace' }, resource: { kind: 'mcp_tool', id: `${id}/echo` }, requested_level: 'workspace', allow: true, reasons: ['engine-mcp-call'], ceiling: 'workspace', policy_hash: policy.hash, args: { server: id, tool: 'echo', arguments: { message } } } }];
    appendAuditRows(db, () => row!);
    return connOnly(message);
  };
  const mode = process.env.BENCH_CLIENT_REUSE;
  const paths: Array<[string, (m: string) => Promise<unknown>]> = [
    ['relay', mode === '1' ? connOnly : mode === 'floor' ? floor : relay],
    ['direct', plain],
  ];

  for (let i = 0; i < 30; i++) await relay(`warm ${i}`), await plain(`warm ${i}`), await pace();
  const rounds = { relay: [] as number[], direct: [] as number[], relay_cpu_us: [] as number[], direct_cpu_us: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const lat = { relay: [] as number[], direct: [] as number[] };
    const cpu = { relay: 0, direct: 0 };
    for (let i = 0; i < CALLS; i++) {
      for (const [name, fn] of (round + i) % 2 ? [...paths].reverse() : paths) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const r = (await fn(`hello ${i}`)) as { content?: Array<{ text?: string }> };
        lat[name as 'relay' | 'direct'].push(performance.now() - t0);
        const c = process.cpuUsage(c0);
        cpu[name as 'relay' | 'direct'] += c.user + c.system;
        if (!String(r.content?.[0]?.text).includes(`hello ${i}`)) throw new Error(`${name}: unexpected answer ${JSON.stringify(r)}`);
      }
      await pace();
    }
    rounds.relay.push(median(lat.relay));
    rounds.direct.push(median(lat.direct));
    // This process's CPU while each path's calls were in flight (the calls are sequential, so it is that path's), µs per call.
    rounds.relay_cpu_us.push(cpu.relay / CALLS);
    rounds.direct_cpu_us.push(cpu.direct / CALLS);
    process.stderr.write(`client round ${round + 1}/${ROUNDS} done\n`);
  }
  await direct.close();
  const report = await conn.close();
  db.close();
  return { rounds: ROUNDS, calls_per_round: CALLS, cleanup: report.outcome, ...rounds };
}

export const run = main;
