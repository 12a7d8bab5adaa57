/*
 * What reaching only granted hosts costs (bundled and run by bench/net-bridge.mjs; not a
 * test, no assertions). Only a start whose network is a list of hosts pays any of it.
 *
 *   start: `true` sandboxed with no network against the same start with one granted host
 *          (the proxy started outside, its socket and the bridge bound in, the bridge as the
 *          sandbox's first process starting `true`), each timed to the exit, proxy closed
 *   request: one plain-http GET to a loopback server, direct against through the proxy's
 *          socket (a gate decision and its audit row per connection), sequential
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inCgroup } from '../src/engine/spawn/bounds.js';
import { confinedCommand, sandboxSupport } from '../src/engine/spawn/index.js';
import { NO_GRANTS } from '../src/engine/spawn/grants.js';
import { startNetProxy } from '../src/engine/spawn/net-proxy.js';
import { enforce, type GateEnv } from '../src/policy/gate.js';
import { shippedPolicy } from '../src/policy/load.js';
import { openDb } from '../src/store/db.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** One start to exit; root's pids cgroup joined for the fork, as the supervisor does (bounds.ts). */
function once(argv: readonly string[], cwd: string, env: Record<string, string>, cgroup: string | null): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = inCgroup(cgroup, () => spawn(argv[0] as string, argv.slice(1), { cwd, stdio: 'ignore', env }));
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv[0]} exited ${code}`))));
  });
}

function get(opts: { port?: number; socketPath?: string; path: string }): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const r = request({ ...(opts.socketPath ? { socketPath: opts.socketPath } : { host: '127.0.0.1', port: opts.port }), path: opts.path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`status ${res.statusCode}`))));
    });
    r.on('error', reject);
    r.end();
  });
}

export async function run(o: { rounds?: number; calls?: number; requests?: number } = {}) {
  const rounds = o.rounds ?? 5;
  const calls = o.calls ?? 20;
  const requests = o.requests ?? 200;
  const support = sandboxSupport();
  if (support.level !== 'bwrap') throw new Error(`no sandbox here: ${support.detail}`);
  const root = mkdtempSync(join(tmpdir(), 'sc-net-bench-'));
  const project = join(root, 'project');
  const profile = join(root, 'profile');
  mkdirSync(project);
  mkdirSync(profile, { mode: 0o700 });
  const policy = shippedPolicy();
  const db = openDb(profile, 5000);
  const env = { PATH: process.env.PATH ?? '', HOME: root };
  const gate: GateEnv = { policy, db: () => db, project: () => ({ path: project, trusted: true, level: 'workspace', network: false }) };
  const server = createServer((_q, s) => s.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const hosts = [{ host: 'localhost', port, private: false, scope: 'project' as const }];
  const out = { plain: [] as number[], hosts: [] as number[], direct_request: [] as number[], proxied_request: [] as number[], rounds, calls_per_round: calls, requests_per_round: requests };
  try {
    await enforce(gate, { action: 'job:run', principal: { kind: 'engine', owner: 'bench', allow_write: true, allow_approvals: false }, requested_level: 'workspace' }, async (ticket) => {
      const req = { argv: ['true'], cwd: project, env, confine: { project, network: false }, trustedArgv: false, policy };
      for (let r = 0; r < rounds; r++) {
        for (const which of r % 2 ? (['hosts', 'plain'] as const) : (['plain', 'hosts'] as const)) {
          const times: number[] = [];
          for (let i = 0; i < calls; i++) {
            const t0 = performance.now();
            const proxy = which === 'hosts' ? startNetProxy(ticket, { hosts, gate, owner: 'bench', project, limits: policy.limits.net_proxy }) : null;
            const c = confinedCommand(req, support.bwrap as string, profile, undefined, { grants: proxy ? { ...NO_GRANTS, hosts } : NO_GRANTS, proxy });
            await once(c.argv, project, env, c.cgroup);
            times.push(performance.now() - t0);
            c.release();
            proxy?.close();
          }
          out[which].push(median(times));
        }
        const proxy = startNetProxy(ticket, { hosts, gate, owner: 'bench', project, limits: policy.limits.net_proxy });
        const direct: number[] = [];
        const proxied: number[] = [];
        for (let i = 0; i < requests; i++) {
          direct.push(await get({ port, path: '/' }));
          proxied.push(await get({ socketPath: proxy.socket, path: `http://localhost:${port}/` }));
        }
        proxy.close();
        out.direct_request.push(median(direct));
        out.proxied_request.push(median(proxied));
      }
    });
  } finally {
    server.close();
    db.close();
    rmSync(root, { recursive: true, force: true });
  }
  return out;
}
