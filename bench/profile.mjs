// Where a call's CPU goes, in numbers that hold on a busy machine: CPU time (from
// /proc/PID/task/*/schedstat, every thread of the server, in ns) and, with
// --callgrind, instructions counted by valgrind. Wall-clock ratios need an idle
// machine (npm run bench); these do not, because they count only the server's own work.
//
//   node bench/profile.mjs                       stdio and HTTP, ours and the bare SDK v2 servers:
//                                                CPU per paced shadow_status call, CPU to the first tools/list
//   node bench/profile.mjs --calls 1500          more calls (default 600)
//   node bench/profile.mjs --only stdio|http|start
//   node bench/profile.mjs --only http --concurrent 16   CPU per HTTP request from 16 callers at once (the throughput
//                                                case), ours and bare up together, in alternating rounds (--rounds 5)
//   node bench/profile.mjs --root DIR            measure the build in another checkout (say, of an earlier commit)
//   node bench/profile.mjs --cpu-prof DIR        also write V8 CPU profiles of our server (one per transport)
//                                                and print its top functions by self time
//   node bench/profile.mjs --parts               one call's parts in this process (bench/call-bench.ts): CPU µs
//                                                per call, gate, audit row, result, scrubber check, decision…
//   node bench/profile.mjs --relay               the outbound relay call (bench/client-bench.ts) in three forms, each
//                                                against the bare SDK v2 client in the same run: the whole call
//                                                (gate 'mcp:call' + McpConnection), the floor (one decision-sized audit
//                                                row committed, then the call), and the connection alone (a decision
//                                                reused); client CPU µs per call and wall ms. Under chrt -f 10 as root
//                                                for the wall clock; node --cpu-prof bench/client.mjs for a V8 profile
//   node bench/profile.mjs --strace              also count the system calls each server makes per call (strace -c)
//   node bench/profile.mjs --callgrind           instructions per call and to the first tools/list,
//                                                under valgrind (slow: minutes; fewer calls by default)
//   chrt -f 10 node bench/profile.mjs --wall     wall-clock round trips over stdio, ours and bare up side by
//                                                side and called in turn; as root under a real-time priority
//                                                the other load on the machine cannot preempt either, so the
//                                                ratio comes near an idle machine's (not a substitute for one)
//
// Both sides answer the same shadow_status bytes: the bare servers read the answer ours gave
// (BENCH_STATUS_FILE), so a ratio is overhead only. `npm run build` first. Not a test.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBench, median } from './lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const CALLGRIND = argv.includes('--callgrind');
const CALLS = Number(opt('--calls', CALLGRIND ? 200 : 600));
const STARTS = Number(opt('--starts', CALLGRIND ? 1 : 8));
const ONLY = opt('--only', undefined);
const PROF = opt('--cpu-prof', undefined);
const WARM = CALLGRIND ? 300 : 200;
const STRACE = argv.includes('--strace');
const CONCURRENT = Number(opt('--concurrent', 1));

const work = mkdtempSync(join(tmpdir(), 'sc-profile-'));
mkdirSync(join(work, 'project'));
const project = join(work, 'project');
const statusFile = join(work, 'status.json');
// The HTTP gateway runs from a copy whose limits lift the rate limit, as bench/http.mjs does.
const pkg = join(work, 'pkg');
mkdirSync(pkg);
// --root DIR: measure another checkout's build (an earlier commit's, to compare) against the same bare servers.
const ourRoot = opt('--root', root);
for (const f of ['package.json', 'bin', 'dist', 'policy']) cpSync(join(ourRoot, f), join(pkg, f), { recursive: true });
symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'));
const limits = JSON.parse(readFileSync(join(pkg, 'policy', 'limits.json'), 'utf8'));
limits.http_server.requests_per_second = 1000000;
writeFileSync(join(pkg, 'policy', 'limits.json'), JSON.stringify(limits));
const TOKEN = 'b'.repeat(64);
const env = { PATH: process.env.PATH, HOME: work, SHADOWCODE_HOME: join(work, 'profile'), T: TOKEN, BENCH_STATUS_FILE: statusFile };

const ours = (extra = []) => [join(pkg, 'bin', 'shadowcode.js'), '--workspace', project, 'mcp', 'serve', ...extra];
const bareStdio = () => [join(root, 'bench', 'bare-stdio-server.mjs')];
const bareHttp = () => [join(root, 'bench', 'bare-http-server.mjs')];

/** Every thread's CPU time so far, in ms (schedstat: ns on CPU). */
function cpuMs(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns / 1e6;
}

/** User and system CPU ticks of the whole process (/proc/PID/stat fields 14 and 15). */
function ticks(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(f[11]), sys: Number(f[12]) };
}

function launch(args, { nodeFlags = [], stdio = 'pipe' } = {}) {
  const cmd = CALLGRIND ? 'valgrind' : process.execPath;
  const full = CALLGRIND ? ['--tool=callgrind', '--callgrind-out-file=' + join(work, 'cg.%p'), '--dump-instr=no', process.execPath, ...nodeFlags, ...args] : [...nodeFlags, ...args];
  return spawn(cmd, full, { cwd: work, env, stdio: stdio === 'pipe' ? ['pipe', 'pipe', 'pipe'] : ['ignore', 'ignore', 'pipe'] });
}

function rpc(child) {
  let buf = '';
  const waiting = new Map();
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      waiting.get(msg.id)?.(msg);
      waiting.delete(msg.id);
    }
  });
  let id = 0;
  const call = (method, params) =>
    new Promise((resolve) => {
      const n = ++id;
      waiting.set(n, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
    });
  const notify = (method) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`);
  const stop = () => new Promise((r) => (child.on('close', r), child.stdin.end()));
  return { call, notify, stop };
}

async function handshake(s) {
  await s.call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'profile', version: '1' } });
  s.notify('notifications/initialized');
  return s.call('tools/list', {});
}

const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 10);
const pace = () => (PACE_MS ? new Promise((r) => setTimeout(r, PACE_MS)) : Promise.resolve());
const STATUS = { name: 'shadow_status', arguments: {} };

/** Instructions callgrind counted for pid since its last zero (a dump, summed over threads). */
function callgrindDump(pid) {
  for (const f of readdirSync(work)) if (f.startsWith(`cg.${pid}`)) rmSync(join(work, f));
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  let ir = 0;
  for (const f of readdirSync(work).filter((n) => n.startsWith(`cg.${pid}`))) {
    const m = /^summary:\s+(\d+)/m.exec(readFileSync(join(work, f), 'utf8')) ?? /^totals:\s+(\d+)/m.exec(readFileSync(join(work, f), 'utf8'));
    if (m) ir += Number(m[1]);
  }
  return ir;
}
const callgrindZero = (pid) => execFileSync('callgrind_control', ['--zero', String(pid)], { stdio: 'ignore' });

/** The measured quantity for a phase: CPU ms, or million instructions under callgrind. */
async function measure(pid, phase, label) {
  if (STRACE) {
    const log = join(work, `strace.${pid}`);
    const st = spawn('strace', ['-c', '-f', '-o', log, '-p', String(pid)], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 1000));
    await phase();
    await new Promise((r) => (st.on('close', r), st.kill('SIGINT')));
    const lines = readFileSync(log, 'utf8').split('\n').filter((l) => /^\s*[\d.]+\s+[\d.]+\s+\d+\s+\d+/.test(l));
    console.log(`  ${label}: system calls per call`);
    for (const l of lines) {
      const f = l.trim().split(/\s+/);
      const n = Number(f[3]);
      if (n / CALLS >= 0.05) console.log(`    ${(n / CALLS).toFixed(2).padStart(6)}  ${f.at(-1)}`);
    }
    return NaN;
  }
  if (!CALLGRIND) {
    const c0 = cpuMs(pid);
    const t0 = ticks(pid);
    await phase();
    const c1 = cpuMs(pid);
    const t1 = ticks(pid);
    const user = t1.user - t0.user;
    const sys = t1.sys - t0.sys;
    console.log(`  ${label}: ${((100 * user) / (user + sys)).toFixed(0)}% user, ${((100 * sys) / (user + sys)).toFixed(0)}% system`);
    return c1 - c0;
  }
  callgrindZero(pid);
  await phase();
  return callgrindDump(pid) / 1e6;
}
const UNIT = CALLGRIND ? 'M instructions' : 'CPU ms';

async function stdioCalls(name, args, nodeFlags = []) {
  const child = launch(args, { nodeFlags });
  child.stderr.on('data', () => undefined);
  const s = rpc(child);
  await handshake(s);
  let answer;
  for (let i = 0; i < WARM; i++) (answer = await s.call('tools/call', STATUS)), await pace();
  if (answer.result?.isError) throw new Error(`${name}: ${JSON.stringify(answer.result)}`);
  const per = (await measure(child.pid, async () => {
    for (let i = 0; i < CALLS; i++) await s.call('tools/call', STATUS), await pace();
  }, `stdio ${name}`)) / CALLS;
  await s.stop();
  return { per, answer: answer.result };
}

function startHttp(args, ready, nodeFlags = []) {
  const child = launch(args, { nodeFlags, stdio: 'http' });
  return new Promise((resolve) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = ready.exec(err);
      if (m) resolve({ child, port: Number(m[1]) });
    });
  });
}

const httpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'shadow_status', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
const httpCall = (port) =>
  new Promise((resolve, reject) => {
    const headers = {
      host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'shadow_status', 'content-length': Buffer.byteLength(httpBody),
    };
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(httpBody);
  });

async function httpCalls(name, args, ready, nodeFlags = []) {
  const { child, port } = await startHttp(args, ready, nodeFlags);
  let answer;
  for (let i = 0; i < WARM; i++) answer = await httpCall(port);
  const per = (await measure(child.pid, async () => {
    for (let i = 0; i < CALLS; i++) await httpCall(port);
  }, `HTTP ${name}`)) / CALLS;
  await new Promise((r) => (child.on('close', r), child.kill('SIGTERM')));
  return { per, answer };
}

/** CPU (or instructions) from launch to the tools/list answer, median over STARTS launches. */
async function coldStart(args) {
  const xs = [];
  for (let i = 0; i < STARTS; i++) {
    if (CALLGRIND) {
      const child = launch(args);
      child.stderr.on('data', () => undefined);
      const s = rpc(child);
      await handshake(s);
      xs.push(callgrindDump(child.pid) / 1e6);
      await s.stop();
    } else {
      const child = launch(args);
      child.stderr.on('data', () => undefined);
      const s = rpc(child);
      await handshake(s);
      xs.push(cpuMs(child.pid));
      await s.stop();
    }
  }
  return median(xs);
}

/** Top functions by self time in a .cpuprofile, and the share of a few we care about. */
function summarize(file, label) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const dt = new Map();
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  const self = new Map();
  for (const n of p.nodes) {
    const cf = n.callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (dt.get(n.id) ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${label}: ${(total / 1000).toFixed(0)} ms sampled; top self time:`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
}

function newestProfile(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  return files.sort().at(-1);
}

const report = (line) => console.log(line);

if (argv.includes('--relay')) {
  const { run } = await loadBench(root, 'client-bench');
  const ratio = (a, b) => median(a.map((x, i) => x / b[i])).toFixed(2);
  for (const [mode, label] of [['0', 'whole call'], ['floor', 'floor: audit row + call'], ['1', 'connection alone']]) {
    process.env.BENCH_CLIENT_REUSE = mode;
    const r = await run();
    report(`relay ${label.padEnd(24)} wall ${median(r.relay).toFixed(2)} ms vs bare ${median(r.direct).toFixed(2)} ms: ${ratio(r.relay, r.direct)}x   CPU ${median(r.relay_cpu_us).toFixed(0)} µs vs ${median(r.direct_cpu_us).toFixed(0)} µs: ${ratio(r.relay_cpu_us, r.direct_cpu_us)}x`);
  }
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

if (argv.includes('--parts')) {
  const { run } = await loadBench(root, 'call-bench');
  for (const [name, us] of await run()) if (!Number.isNaN(us)) report(`${name.padEnd(10)} ${us.toFixed(1)} µs CPU`);
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

// Our answer first: the bare servers give back exactly these bytes.
{
  const s = rpc(spawn(process.execPath, ours(), { cwd: work, env, stdio: ['pipe', 'pipe', 'ignore'] }));
  await handshake(s);
  const a = await s.call('tools/call', STATUS);
  // Held past boot's save delay, so every later launch compiles from the warm code cache (as after a first session).
  await new Promise((r) => setTimeout(r, 2500));
  await s.stop();
  writeFileSync(statusFile, JSON.stringify(a.result.structuredContent));
}

if (argv.includes('--wall')) {
  const servers = { shadowcode: rpc(launch(ours())), bare: rpc(launch(bareStdio())) };
  for (const s of Object.values(servers)) await handshake(s);
  const lat = { shadowcode: [], bare: [] };
  for (let i = 0; i < WARM; i++) for (const s of Object.values(servers)) await s.call('tools/call', STATUS), await pace();
  // Past boot's save delay: the code cache is written before the measured calls, not during them.
  await new Promise((r) => setTimeout(r, 2000));
  for (let i = 0; i < CALLS; i++) {
    for (const name of i % 2 ? ['shadowcode', 'bare'] : ['bare', 'shadowcode']) {
      const t = performance.now();
      await servers[name].call('tools/call', STATUS);
      lat[name].push(performance.now() - t);
      await pace();
    }
  }
  for (const s of Object.values(servers)) await s.stop();
  const a = median(lat.shadowcode);
  const b = median(lat.bare);
  report(`stdio shadow_status round trip (wall ms, median of ${CALLS} paced calls each, in turn): shadowcode ${a.toFixed(3)}, bare ${b.toFixed(3)}, ratio ${(a / b).toFixed(2)}`);
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

if (!ONLY || ONLY === 'start') {
  const a = await coldStart(ours());
  const b = await coldStart(bareStdio());
  report(`cold start to tools/list (${UNIT}, median of ${STARTS}): shadowcode ${a.toFixed(1)}, bare ${b.toFixed(1)}, ratio ${(a / b).toFixed(2)}`);
}
if (!ONLY || ONLY === 'stdio') {
  const flags = PROF ? [`--cpu-prof`, `--cpu-prof-dir=${join(PROF, 'stdio')}`, '--cpu-prof-interval=50'] : [];
  const a = await stdioCalls('shadowcode', ours(), flags);
  const b = await stdioCalls('bare', bareStdio(), PROF ? [`--cpu-prof`, `--cpu-prof-dir=${join(PROF, 'stdio-bare')}`, '--cpu-prof-interval=50'] : []);
  // The owner label and pid differ from one launch to the next; everything else must be the same bytes.
  const norm = (r) => JSON.stringify(r).replace(/(stdio|http):\d+:[0-9a-f]{8}/g, 'OWNER');
  if (norm(a.answer) !== norm(b.answer)) throw new Error(`the answers differ:\n${JSON.stringify(a.answer)}\n${JSON.stringify(b.answer)}`);
  report(`stdio shadow_status (${UNIT} per call, ${CALLS} paced calls): shadowcode ${a.per.toFixed(3)}, bare ${b.per.toFixed(3)}, ratio ${(a.per / b.per).toFixed(2)}`);
  if (PROF) summarize(newestProfile(join(PROF, 'stdio')), 'stdio profile (whole process)');
}
if ((!ONLY || ONLY === 'http') && CONCURRENT > 1) {
  // Both up at once, measured in alternating rounds: the machine's load drifts, so a ratio is taken within a round.
  const profFlags = (dir) => (PROF ? [`--cpu-prof`, `--cpu-prof-dir=${join(PROF, dir)}`, '--cpu-prof-interval=100'] : []);
  const a = await startHttp(ours(['--http', '127.0.0.1:0', '--token-env', 'T']), /gateway ready at http:\/\/127\.0\.0\.1:(\d+)/, profFlags('http'));
  const b = await startHttp(bareHttp(), /bare ready at http:\/\/127\.0\.0\.1:(\d+)/, profFlags('http-bare'));
  const servers = { shadowcode: a, bare: b };
  const lat = { shadowcode: [], bare: [] };
  const burst = async ({ port }, n, into = []) => {
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENT }, async () => {
      while (next++ < n) {
        const t = performance.now();
        await httpCall(port);
        into.push(performance.now() - t);
      }
    }));
  };
  for (const s of Object.values(servers)) await burst(s, WARM);
  if (STRACE) for (const [name, s] of Object.entries(servers)) await measure(s.child.pid, () => burst(s, CALLS), `HTTP ${name}, ${CONCURRENT} callers`);
  const ROUNDS = Number(opt('--rounds', 5));
  const per = { shadowcode: [], bare: [] };
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = {};
    for (const name of round % 2 ? ['bare', 'shadowcode'] : ['shadowcode', 'bare']) {
      const pid = servers[name].child.pid;
      const c0 = cpuMs(pid);
      await burst(servers[name], CALLS, lat[name]);
      cpu[name] = (cpuMs(pid) - c0) / CALLS;
      per[name].push(cpu[name]);
    }
    ratios.push(cpu.shadowcode / cpu.bare);
  }
  for (const { child } of Object.values(servers)) await new Promise((r) => (child.on('close', r), child.kill('SIGTERM')));
  const f = (xs) => `${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)})`;
  const q = (xs, p) => [...xs].sort((x, y) => x - y)[Math.floor(p * (xs.length - 1))].toFixed(2);
  for (const name of Object.keys(lat)) report(`  ${name}: wall ms per request (noisy on a busy machine) p50 ${q(lat[name], 0.5)}, p90 ${q(lat[name], 0.9)}, p99 ${q(lat[name], 0.99)}, max ${q(lat[name], 1)}`);
  if (PROF) for (const [dir, label] of [['http', 'ours'], ['http-bare', 'bare']]) summarize(newestProfile(join(PROF, dir)), `HTTP profile, ${label} (whole process)`);
  report(`HTTP shadow_status, ${CONCURRENT} concurrent callers (CPU ms per request, ${CALLS} a round, ${ROUNDS} rounds): shadowcode ${f(per.shadowcode)}, bare ${f(per.bare)}, ratio ${f(ratios)}; throughput ratio ≈ 1/ratio`);
} else if (!ONLY || ONLY === 'http') {
  const flags = PROF ? [`--cpu-prof`, `--cpu-prof-dir=${join(PROF, 'http')}`, '--cpu-prof-interval=50'] : [];
  const a = await httpCalls('shadowcode', ours(['--http', '127.0.0.1:0', '--token-env', 'T']), /gateway ready at http:\/\/127\.0\.0\.1:(\d+)/, flags);
  const b = await httpCalls('bare', bareHttp(), /bare ready at http:\/\/127\.0\.0\.1:(\d+)/, PROF ? [`--cpu-prof`, `--cpu-prof-dir=${join(PROF, 'http-bare')}`, '--cpu-prof-interval=50'] : []);
  report(`HTTP shadow_status (${UNIT} per request, ${CALLS} sequential): shadowcode ${a.per.toFixed(3)}, bare ${b.per.toFixed(3)}, ratio ${(a.per / b.per).toFixed(2)}`);
  if (PROF && existsSync(join(PROF, 'http'))) summarize(newestProfile(join(PROF, 'http')), 'HTTP profile (whole process)');
}
rmSync(work, { recursive: true, force: true });
