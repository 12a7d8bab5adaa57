// Network by host, with real processes: a sandboxed curl reaches a granted local HTTP server by
// its name through shadowcode's proxy (plain http and a CONNECT tunnel), and is refused with a
// 403 that names the rule and the grant that would allow it for any other host; every attempt
// is a net:connect decision in the audit log, tied to its start. A granted name that resolves
// to a loopback or private address is refused unless the grant says --private (a DNS answer
// cannot be made to point inward here, so that one test gives the proxy its own resolver).
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { bridgeProgram, sandboxSupport } from '../../../src/engine/spawn/index.js';
import { startNetProxy } from '../../../src/engine/spawn/net-proxy.js';
import { sandboxArgv } from '../../../src/engine/spawn/sandbox.js';
import { enforce, type GateEnv } from '../../../src/policy/gate.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { readAudit } from '../../../src/store/audit.js';
import { openDb } from '../../../src/store/db.js';
import { cli, type Sandbox, SHARED_TMP, sandbox } from '../../fixtures/env.js';

const ws = (sb: Sandbox) => ['--project', sb.project];

async function httpServer(t: any): Promise<{ port: number; hits: () => string[] }> {
  const hits: string[] = [];
  const server: Server = createServer((q, s) => {
    hits.push(`${q.method} ${q.url} host=${q.headers.host}`);
    s.end(`hello from ${q.headers.host}${q.url}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  return { port: (server.address() as { port: number }).port, hits: () => hits };
}

/** `shadowcode test --yes -- sh -c script`: its output, and the net:connect decisions and the spawn row it left. */
async function run(sb: Sandbox, script: string) {
  const r = await cli(sb, ['--json', ...ws(sb), 'test', '--yes', '--', 'sh', '-c', script]);
  const data = JSON.parse(r.stdout);
  const db = openDb(sb.profile, 5000);
  const rows = readAudit(db, { kinds: ['decision', 'spawn'], limit: 10000 }).map((x): Record<string, any> => ({ row: x.kind, ...(x.body as Record<string, any>) }));
  db.close();
  const spawn = rows.filter((x) => x.row === 'spawn').at(-1) as Record<string, any>;
  return { out: String(data.output_tail ?? ''), data, spawn, connects: rows.filter((x) => x.row === 'decision' && x.action === 'net:connect' && x.args?.spawn_decision === spawn.decision_id) };
}

t.test('a sandboxed curl reaches a granted host by name through the proxy, is refused for any other, and each attempt is recorded', async (t) => {
  const sb = sandbox('scn');
  await cli(sb, [...ws(sb), 'trust']);
  const srv = await httpServer(t);
  const other = await httpServer(t);
  t.equal((await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', `localhost:${srv.port}`])).code, 0);
  // NO_PROXY keeps the sandbox's own loopback inside: a granted localhost is asked for through the proxy explicitly.
  const script = [
    `curl -sS --noproxy '' http://localhost:${srv.port}/plain`,
    `curl -sS -p --noproxy '' http://localhost:${srv.port}/tunnel`,
    `curl -sS --noproxy '' http://127.0.0.1:${other.port}/literal`,
    `curl -sS --noproxy '' http://localhost:${other.port}/other-port`,
    `curl -sS http://denied.example.invalid/x`,
    `curl -sS -o /dev/null -w 'CONNECT %{http_connect}\\n' https://denied.example.invalid/ 2>/dev/null; true`,
    `curl -sS --max-time 2 http://127.0.0.1:${srv.port}/direct 2>/dev/null || echo DIRECT-FAILED`,
  ].join('; ');
  const r = await run(sb, script);
  t.match(r.out, `hello from localhost:${srv.port}/plain`, 'plain http, by name, through the proxy');
  t.match(r.out, `hello from localhost:${srv.port}/tunnel`, 'a CONNECT tunnel, by name');
  t.match(r.out, new RegExp(`GET 127\\.0\\.0\\.1:${other.port} refused by net-host-not-granted: no sandbox grant names 127\\.0\\.0\\.1:${other.port}; to allow it: shadowcode --project ${sb.project} sandbox allow --net 127\\.0\\.0\\.1:${other.port} \\[SC_NET_HOST_REFUSED\\]`));
  t.match(r.out, new RegExp(`GET localhost:${other.port} refused by net-host-not-granted`), 'a grant names its port');
  t.match(r.out, /GET denied\.example\.invalid:80 refused by net-host-not-granted/);
  t.match(r.out, /CONNECT 403/, 'a refused tunnel gets its 403 too');
  t.match(r.out, /DIRECT-FAILED/, 'around the proxy there is no way out');
  t.same(other.hits(), [], 'the other server saw nothing');
  t.same(srv.hits().sort(), [`GET /plain host=localhost:${srv.port}`, `GET /tunnel host=localhost:${srv.port}`]);
  t.match(r.spawn, { kind: 'command', level: 'bwrap', network: false, hosts: [`localhost:${srv.port}`] });
  const seen = r.connects.map((c) => [c.resource.id, c.allow, c.reasons[0], c.args.method]);
  t.same(seen.sort(), [
    [`127.0.0.1:${other.port}`, false, 'net-host-not-granted', 'GET'],
    ['denied.example.invalid:443', false, 'net-host-not-granted', 'CONNECT'],
    ['denied.example.invalid:80', false, 'net-host-not-granted', 'GET'],
    [`localhost:${other.port}`, false, 'net-host-not-granted', 'GET'],
    [`localhost:${srv.port}`, true, 'net-granted-host', 'CONNECT'],
    [`localhost:${srv.port}`, true, 'net-granted-host', 'GET'],
  ].sort(), 'one decision per attempt, with host and port');
  t.match(r.connects.find((c) => c.allow), { principal: { kind: 'engine' }, project: sb.project, resource: { kind: 'net_host', host: 'localhost', port: srv.port, granted: true, private_address: false }, args: { grant: 'project' } });
  t.ok(r.connects.filter((c) => !c.allow).every((c) => c.args.addresses.length === 0), 'a host no grant names is never looked up');
});

t.test('the bridge passes the exit status on, and only a start with granted hosts has one', async (t) => {
  const sb = sandbox('scn');
  await cli(sb, [...ws(sb), 'trust']);
  const plain = await run(sb, 'echo "proxy=${HTTPS_PROXY:-none}"; exit 7');
  t.match(plain.out, /proxy=none/);
  t.equal(plain.data.job.exit_code, 7);
  t.notOk('hosts' in plain.spawn);
  await cli(sb, [...ws(sb), 'sandbox', 'allow', '--net', 'api.example.com']);
  const bridged = await run(sb, 'echo "proxy=$HTTPS_PROXY no=$NO_PROXY"; exit 7');
  t.match(bridged.out, /proxy=http:\/\/127\.0\.0\.1:\d+ no=localhost,127\.0\.0\.1,::1/);
  t.equal(bridged.data.job.exit_code, 7, 'the same status through the bridge');
  const killed = await run(sb, 'kill -TERM $$');
  t.equal(killed.data.job.exit_code, 143, 'a command killed by a signal reads as it does without the bridge');
  await cli(sb, [...ws(sb), 'trust', '--network']);
  const open = await run(sb, 'echo "proxy=${HTTPS_PROXY:-none}"');
  t.match(open.out, /proxy=none/, 'with the whole network there is nothing to narrow');
  t.match(open.spawn, { network: true });
  t.notOk('hosts' in open.spawn);
});

t.test('a granted name that resolves inward is refused unless granted --private; a grant of an address names it', async (t) => {
  const srv = await httpServer(t);
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'scn-')));
  const policy = shippedPolicy();
  const db = openDb(dir, 5000);
  t.teardown(() => db.close());
  const project = join(dir, 'project');
  const gate: GateEnv = { policy, db: () => db, project: () => ({ path: project, trusted: true, level: 'workspace', network: false }) };
  // A public-looking name whose answer points at this machine, as a rebinding attacker's DNS would give.
  const lookup = async (host: string) => (host === 'rebind.example.com' || host === 'intranet.example.com' ? [{ address: '127.0.0.1', family: 4 }] : []);
  const hosts = [
    { host: 'rebind.example.com', port: null, private: false, scope: 'project' as const },
    { host: 'intranet.example.com', port: srv.port, private: true, scope: 'project' as const },
    { host: '127.0.0.1', port: srv.port, private: false, scope: 'project' as const },
  ];
  const proxy = await enforce(gate, { action: 'job:run', principal: { kind: 'engine', owner: 'test', allow_write: true, allow_approvals: false }, requested_level: 'workspace' }, (ticket) =>
    startNetProxy(ticket, { hosts, gate, owner: 'test', project, limits: policy.limits.net_proxy, lookup }),
  );
  t.teardown(() => proxy.close());
  const ask = (url: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = request({ socketPath: proxy.socket, path: url, headers: { host: new URL(url).host } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      r.on('error', reject);
      r.end();
    });
  const rebound = await ask(`http://rebind.example.com:${srv.port}/a`);
  t.equal(rebound.status, 403);
  t.match(rebound.body, /refused by net-name-resolves-inward: rebind\.example\.com:\d+ resolves to 127\.0\.0\.1, a loopback or private address, and its grant does not say it may .* --private \[SC_NET_HOST_REFUSED\]/);
  t.equal((await ask(`http://intranet.example.com:${srv.port}/b`)).status, 200, 'a grant with --private reaches it');
  t.equal((await ask(`http://127.0.0.1:${srv.port}/c`)).status, 200, 'a grant of the address names it');
  t.same(srv.hits(), [`GET /b host=intranet.example.com:${srv.port}`, `GET /c host=127.0.0.1:${srv.port}`], 'the refused one never reached the server');
  const rows = readAudit(db, { kinds: ['decision'], limit: 100 }).map((r) => r.body as Record<string, any>).filter((b) => b.action === 'net:connect');
  t.match(rows, [
    { allow: false, reasons: ['net-name-resolves-inward'], resource: { host: 'rebind.example.com', granted: true, private_address: true }, args: { addresses: ['127.0.0.1'] } },
    { allow: true, resource: { host: 'intranet.example.com', private_address: false } },
    { allow: true, resource: { host: '127.0.0.1', private_address: false } },
  ]);
});

t.test('as an ordinary user too: the bridge listens inside its own network and the proxy outside answers', async (t) => {
  const srv = await httpServer(t);
  const b = sandboxSupport().bwrap;
  if (!b) throw new Error(`bwrap is needed here: ${sandboxSupport().detail}`);
  // In the shared temp folder, owned by that user: its home, its project, and the bridge (the checkout may not be readable to it).
  const root = realpathSync(mkdtempSync(join(SHARED_TMP, 'scn-user-')));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  chmodSync(root, 0o755);
  const home = join(root, 'home');
  const project = join(root, 'project');
  mkdirSync(home);
  mkdirSync(project);
  const bridge = join(root, 'net-bridge.cjs');
  copyFileSync(bridgeProgram(), bridge);
  chmodSync(bridge, 0o644);
  // As root, the sandbox is started as nobody; run as an ordinary user (.ci/non-root), as that user.
  const asRoot = process.getuid?.() === 0;
  const nobody = asRoot ? 65534 : (process.getuid?.() ?? -1);
  if (asRoot) for (const p of [home, project]) chownSync(p, nobody, nobody);
  const policy = shippedPolicy();
  const db = openDb(root, 5000);
  t.teardown(() => db.close());
  const gate: GateEnv = { policy, db: () => db, project: () => ({ path: project, trusted: true, level: 'workspace', network: false }) };
  const hosts = [{ host: 'localhost', port: srv.port, private: false, scope: 'project' as const }];
  // Its folder in the temp folder that user can reach (this file's own is private to it).
  const tmp = process.env.TMPDIR;
  process.env.TMPDIR = root;
  const proxy = await enforce(gate, { action: 'job:run', principal: { kind: 'engine', owner: 'test', allow_write: true, allow_approvals: false }, requested_level: 'workspace' }, (ticket) =>
    startNetProxy(ticket, { hosts, gate, owner: 'test', project, limits: policy.limits.net_proxy }),
  ).finally(() => {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
  });
  t.teardown(() => proxy.close());
  // The proxy would run as that user too: its folder and socket are that user's.
  if (asRoot) {
    chownSync(proxy.dir, nobody, nobody);
    chownSync(proxy.socket, nobody, nobody);
  }
  const script = `id -u; curl -sS --noproxy '' http://localhost:${srv.port}/as-user; curl -sS --noproxy '' http://localhost:1/closed`;
  const argv = sandboxArgv({
    argv: ['/bin/sh', '-c', script], cwd: project, env: { HOME: home, PATH: '/usr/bin:/bin' }, bwrap: b, trusted: false, unset: [], stateLimits: policy.limits.runners,
    project, network: false, profileDir: null, policy: policy.sandbox, grants: { paths: [], hosts, skipped: [] }, proxy: { dir: proxy.dir, socket: proxy.socket, bridge, node: process.execPath },
  });
  // Asynchronously: the proxy answering it lives in this process.
  const out = await new Promise<string>((resolve) => {
    const c = spawn(argv[0] as string, argv.slice(1), { ...(asRoot ? { uid: nobody, gid: nobody } : {}), env: { PATH: '/usr/bin:/bin', HOME: home } });
    let text = '';
    c.stdout.on('data', (d) => (text += d));
    c.stderr.on('data', (d) => (text += d));
    c.on('close', () => resolve(text));
  });
  t.match(out, new RegExp(`^${nobody}$`, 'm'), 'it ran as that user');
  t.match(out, `hello from localhost:${srv.port}/as-user`);
  t.match(out, /GET localhost:1 refused by net-host-not-granted/);
});
