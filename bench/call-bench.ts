/*
 * One stdio tool call's parts, in this process, in CPU microseconds per operation
 * (process.cpuUsage over many runs: it holds on a busy machine). Bundled and run by
 * bench/profile.mjs --parts; not a test, no assertions.
 *
 *   call       callTool(shadow_status): arguments, gate (transaction + audit row), run, result
 *   gate       enforce(tool:shadow_status) with an empty run: the audited decision alone
 *   relay      enforce(mcp:call) as the outbound relay asks it (bench/client-bench.ts): trust read
 *              in the transaction, the tool's arguments in the row; an empty run
 *   audit      appendAuditRows of one decision-sized row: BEGIN IMMEDIATE … COMMIT
 *   result     dataResult of the status answer: scrub, serialise, size check
 *   snapshot   secretSnapshot: the scrubber's check that the secret set is unchanged
 *   authorize  the pure decision
 *   server     buildServer: the SDK server the HTTP gateway builds for each request
 *   request    the gate request's schema check
 *   project    the project's trust read (outside a transaction)
 */
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../src/engine/engine.js';
import { authorize } from '../src/policy/authorize.js';
import { enforce } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { Connection } from '../src/server/connection.js';
import { buildServer } from '../src/server/build.js';
import { callTool } from '../src/server/dispatch.js';
import { dataResult } from '../src/server/result.js';
import { check } from '../src/schema/validate.js';
import { appendAuditRows } from '../src/store/audit.js';
import { getProject, setTrust } from '../src/store/projects.js';
import { secretSnapshot } from '../src/util/secret-values.js';

const N = Number(process.env.BENCH_PARTS_N ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

/** CPU µs per run of fn: the median over ROUNDS rounds of n runs each. */
const ONLY = process.env.BENCH_PARTS?.split(',');

async function time(name: string, fn: () => unknown, n = N): Promise<[string, number]> {
  if (ONLY && !ONLY.includes(name)) return [name, NaN];
  for (let i = 0; i < Math.min(n, 500); i++) await fn();
  const per: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    per.push((c.user + c.system) / n);
  }
  per.sort((a, b) => a - b);
  return [name, per[Math.floor(per.length / 2)] as number];
}

export async function run(): Promise<Array<[string, number]>> {
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'sc-parts-')));
  const project = join(work, 'project');
  mkdirSync(project);
  const policy = shippedPolicy();
  const engine = new Engine(join(work, 'profile'), policy, { PATH: process.env.PATH });
  const conn = new Connection({ transport: 'stdio', project, allowWrite: false, allowApprovals: false, engine });
  const first = await callTool(conn, 'shadow_status', {});
  const data = first.structuredContent;
  const req = conn.requestNow('tool:shadow_status', { args: {} });
  const row = { kind: 'decision', body: { decision_id: '00000000-0000-0000-0000-000000000000', action: 'tool:shadow_status', principal: req.principal, project: project, allow: true, reasons: ['x'], ceiling: 'read_only', policy_hash: policy.hash, args: {} } };
  const out: Array<[string, number]> = [];
  out.push(await time('call', () => callTool(conn, 'shadow_status', {})));
  out.push(await time('gate', () => enforce(conn.gate(), conn.request('tool:shadow_status', { args: {} }), () => undefined)));
  const gateEnv = { policy, db: () => engine.db(), project: (d: Parameters<typeof getProject>[0]) => { const p = getProject(d, project); return { path: p.path, trusted: p.trusted, level: p.level, network: p.network }; } };
  const principal = { kind: 'engine', owner: 'bench:owner', allow_write: true, allow_approvals: false } as const;
  let n = 0;
  // An external server is reached only from a trusted project at workspace level, as in bench/client-bench.ts.
  await enforce({ policy, db: () => engine.db() }, { action: 'cli:trust', principal: { kind: 'cli', owner: 'cli', allow_write: true, allow_approvals: true }, project: null }, (t) => setTrust(t, engine.db(), project, 'workspace'));
  out.push(await time('relay', () => enforce(gateEnv, { action: 'mcp:call', principal, requested_level: 'workspace', resource: { kind: 'mcp_tool', id: 'bench:everything/echo' }, args: { server: 'bench:everything', tool: 'echo', arguments: { message: `hello ${n++}` } } }, () => undefined)));
  out.push(await time('audit', () => appendAuditRows(engine.db(), () => [row])));
  out.push(await time('result', () => dataResult(data, 2_000_000), N * 3));
  out.push(await time('snapshot', () => secretSnapshot(), N * 10));
  out.push(await time('authorize', () => authorize(req, policy.permissions), N * 10));
  out.push(await time('server', () => buildServer(conn)));
  out.push(await time('request', () => check('gate-request', req, 'SC_POLICY_REQUEST_INVALID', 'gate request'), N * 10));
  out.push(await time('project', () => getProject(engine.db(), project), N * 10));
  await engine.close();
  return out;
}
