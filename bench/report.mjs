// Renders bench/results/{stdio,http,client,spawn,agent}.json as docs/performance.md.
//   node bench/report.mjs          print the page
//   node bench/report.mjs --write  write it to docs/performance.md
// The wall-clock numbers come only from the result files: run `npm run bench` first, on an
// idle machine. A result file that is missing shows as "—" (not measured in this run); with
// none at all (a fresh clone) it says so and writes nothing, rather than a page of dashes.
// The section measured on a busy machine (CPU, instructions, system calls) is text kept
// here, from bench/profile.mjs: update it when you measure again.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Stands for a result file this run did not write: every field is itself, and shows as "—". */
const PENDING = new Proxy({}, { get: (_t, k) => (k === 'pending' ? true : k === Symbol.toPrimitive ? () => NaN : PENDING) });
const read = (n) => {
  const file = `bench/results/${n}.json`;
  if (!existsSync(`${root}${file}`)) return PENDING;
  try {
    return JSON.parse(readFileSync(`${root}${file}`, 'utf8'));
  } catch (err) {
    process.stderr.write(`bench/report.mjs: ${file} is not a result file (${err.message}); run \`npm run bench\` again. Nothing was written.\n`);
    process.exit(1);
  }
};
const s = read('stdio');
const h = read('http');
const c = read('client');
const a = read('agent');
const sp = read('spawn');
if ([s, h, c, a, sp].every((r) => r === PENDING)) {
  process.stderr.write('bench/report.mjs: bench/results/ holds no results. They are measured on this machine and are not part of a clone: run `npm run bench` first (it writes bench/results/), then this again. Nothing was written.\n');
  process.exit(1);
}
const under = a.openai.step_ms_median < 2 && a.anthropic.step_ms_median < 2 && a.openai.first_request_ms_median < 20 && a.anthropic.first_request_ms_median < 20;
const num = (f) => (x) => (typeof x === 'number' ? f(x) : '—');
const ms = num((x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)));
const one = num((x) => x.toFixed(1));
const f2 = num((x) => x.toFixed(2));
const f0 = num((x) => x.toFixed(0));
const val = (x) => (typeof x === 'number' || typeof x === 'string' ? x : '—');
const cell = (st, f = ms) => (st.pending ? '—' : `${f(st.median)} (${f(st.min)}–${f(st.max)})`);
const ratio = (st) => (st.pending ? '—' : `${f2(st.median)}× (${f2(st.min)}–${f2(st.max)})`);
const rps = (st) => cell(st, f0);

// [name, value, shown as, goal, met]
const x = (v) => `${f2(v)}×`;
const TARGETS = [
  ['cold start (checkout)', s.start_ms.ratio.median, x, '≤ 0.6×', (r) => r <= 0.6],
  ['cold start (installed)', s.start_ms.installed_ratio.median, x, '≤ 0.6×', (r) => r <= 0.6],
  ['stdio round trip', s.call_ms.ratio.median, x, '≤ 1.3×', (r) => r <= 1.3],
  ['HTTP latency', h.latency_ms.ratio.median, x, '≤ 1.25×', (r) => r <= 1.25],
  ['HTTP throughput', h.rps.ratio.median, x, '≥ 0.8×', (r) => r >= 0.8],
  ['idle RSS', s.idle_rss_mib.shadowcode.median, (v) => `${one(v)} MiB`, '≤ 80 MiB', (r) => r <= 80],
  ['outbound relay call', c.call_ms.ratio.median, x, '≤ 1.2×', (r) => r <= 1.2],
  ['sandbox, added per process start', sp.start_ms.added.median, (v) => `${one(v)} ms`, '≤ 15 ms', (r) => r <= 15],
];

const text = `# Performance

\`npm run bench\` races \`mcp serve\` against minimal servers on the bare SDK v2
(\`bench/bare-stdio-server.mjs\`, \`bench/bare-http-server.mjs\`) in the same run, in
${val(s.rounds)} rounds whose order alternates so that neither side always goes first.
The bare servers answer \`shadow_status\` with the very bytes ours answers (captured from
our server at the start of the run), so a ratio measures overhead, not payload.
Each cell is the median over rounds of the per-round medians, with the lowest and
highest round in brackets; ratios are taken within a round. \`node bench/report.mjs
--write\` regenerates this page from \`bench/results/\`. This run: Node ${val(s.node)},
${val(s.cpus)} CPUs. On so small a machine the brackets are wide: the HTTP table's
"bare vs bare" column, two identical servers, shows how much of a ratio is noise.

| measure | shadowcode | bare SDK v2 | ratio |
| --- | --- | --- | --- |
| cold start to the first \`tools/list\` answer, from the checkout (ms) | ${cell(s.start_ms.shadowcode)} | ${cell(s.start_ms.bare)} | ${ratio(s.start_ms.ratio)} |
| the same, from the package installed out of its \`npm pack\` tarball (ms) | ${cell(s.start_ms.installed)} | ${cell(s.start_ms.bare)} | ${ratio(s.start_ms.installed_ratio)} |
| \`shadow_status\` round trip over stdio, paced under the frame-rate limit (ms) | ${cell(s.call_ms.shadowcode)} | ${cell(s.call_ms.bare)} | ${ratio(s.call_ms.ratio)} |
| idle RSS after \`tools/list\` (MiB) | ${cell(s.idle_rss_mib.shadowcode, one)} | ${cell(s.idle_rss_mib.bare, one)} | |

Over HTTP (\`bench/http.mjs\`: the gateway runs from a copy of the package whose
\`policy/limits.json\` lifts the rate limit for the benchmark only; a new connection
per request for every server; a second bare server is measured like the others as a
control, so "bare against bare" shows what order and noise alone account for):

| measure | shadowcode | bare SDK v2 | ratio | bare vs bare |
| --- | --- | --- | --- | --- |
| \`shadow_status\` latency, sequential (ms) | ${cell(h.latency_ms.shadowcode)} | ${cell(h.latency_ms.bare)} | ${ratio(h.latency_ms.ratio)} | ${ratio(h.latency_ms.control_ratio)} |
| throughput, 16 concurrent callers (req/s) | ${rps(h.rps.shadowcode)} | ${rps(h.rps.bare)} | ${ratio(h.rps.ratio)} | ${ratio(h.rps.control_ratio)} |

The outbound client (\`bench/client.mjs\`): an approved relay call, the gate's
\`mcp:call\` decision and \`McpConnection.call\` with any approval wait excluded, against
the bare SDK v2 \`Client\` calling the same server-everything over stdio; ${val(c.calls_per_round)}
calls per round in ${val(c.rounds)} rounds, alternating which path goes first:

| measure | relay | bare SDK v2 client | ratio |
| --- | --- | --- | --- |
| \`echo\` call over stdio, paced under the frame-rate limit (ms) | ${cell(c.call_ms.relay)} | ${cell(c.call_ms.direct)} | ${ratio(c.call_ms.ratio)} |

Against the targets (medians of this run):

| target | this run | goal | met |
| --- | --- | --- | --- |
${TARGETS.map(([name, v, show, goal, ok]) => (typeof v !== 'number' ? `| ${name} | — | ${goal} | — |` : `| ${name} | ${show(v)} | ${goal} | ${ok(v) ? 'yes' : 'no'} |`)).join('\n')}

${s.pending ? `The wall-clock cells above are "—" until \`npm run bench\` runs on an idle machine
and \`node bench/report.mjs --write\` puts its numbers here: wall-clock ratios taken on a
busy machine measure the other load, not the servers.

` : ''}## Measured on a busy machine: CPU, instructions, system calls

These numbers hold under load, because they count only the server's own work: CPU time
from \`/proc/PID/task/*/schedstat\` (every thread of the server), instructions counted by
valgrind's callgrind, system calls counted by strace; and wall-clock round trips taken
with both sides at a real-time priority (\`chrt -f 10\`), so that the machine's other load
cannot preempt them. They were taken with \`bench/profile.mjs\` on the same 2-CPU
machine while it ran at a load average of 8 to 18, before (commit b6274d5) and after the
work of issue 43, against the same bare servers answering the same bytes; ranges are
the spread of repeated runs. The wall-clock table above is the one the targets are
judged on, on an idle machine.

| measure | before | after |
| --- | --- | --- |
| cold start to the first \`tools/list\`: CPU, ratio to bare (median of 10–14 starts) | 0.77–0.82× | 0.39–0.40× |
| the same, wall clock at real-time priority | 0.80–0.85× | 0.44–0.45× |
| the same, instructions (one start) | 481 M vs 808 M: 0.59× | 232 M vs 797 M: 0.29× |
| \`shadow_status\` over stdio, CPU per call paced at 100/s, ratio to bare | 1.53× (1.82 vs 1.19 ms) | 1.37× (1.48 vs 1.08 ms) |
| the same, CPU per call in bursts of 100 (warm caches) | 1.38–1.43× | 1.31× |
| the same, wall-clock round trip paced, real-time priority | 1.43–1.54× | 1.32–1.35× |
| the same, instructions per call (after 300 warm-up calls) | 1.83 M vs 1.08 M: 1.71× | 1.14 M vs 1.09 M: 1.04× |
| system calls per stdio call (bare: 4.5) | 15.6 | 14.0 |
| one call in process (\`bench/call-bench.ts\`), CPU µs: whole call / gate / audit row alone / result | 123 / 72 / 34 / 18 | 84 / 48 / 34 / 8 |
| HTTP \`shadow_status\` latency, sequential, real-time priority | 1.16–1.21× | 1.14× |
| HTTP CPU per request, sequential | 1.09–1.10× | 1.03–1.10× |
| HTTP throughput, 16 callers, real-time priority (1 s rounds) | 0.66–0.71× | 0.68–0.76× |
| outbound relay \`echo\` call (\`bench/client.mjs\`), real-time priority | 1.30–1.33× | 1.24–1.32× |
| idle RSS after \`tools/list\` (bare: 65.6 MiB) | 65.8 MiB | 67–70 MiB |

A stdio call now runs about as many instructions in user space as the bare server's;
what is left of the CPU ratio is the kernel's share (the transaction's file locks and
WAL writes) and the cache misses of a longer path. Read with care: on a busy machine
each call finds its caches cold (other processes ran
during the 10 ms between calls), which multiplies the cost of every piece of code a call
touches: the same transaction costs 21 µs in a tight loop and 174 µs paced. An idle
machine keeps more of them warm, so its ratios should fall between the burst figures and
the paced ones. Still missed as measured here, and why: the stdio call (1.3× is at the
edge), HTTP throughput (0.8×) and the relay call (1.2×), each for the audited decision
below, which is the floor.

How to measure on a busy machine (\`npm run build\` first):

- \`node bench/profile.mjs\`: CPU per paced call over stdio and per HTTP request, and CPU
  to the first \`tools/list\`, ours and bare; \`--root DIR\` measures another checkout's
  build (an earlier commit's) against the same bare servers.
- \`node bench/profile.mjs --callgrind\`: the same in instructions (minutes per run).
- \`node bench/profile.mjs --strace\`: system calls per call.
- \`node bench/profile.mjs --cpu-prof DIR\`: V8 CPU profiles of ours and bare, with the
  top functions by self time.
- \`node bench/profile.mjs --parts\`: one call's parts in process (\`bench/call-bench.ts\`).
- \`chrt -f 10 node bench/profile.mjs --wall\` (as root): paced wall-clock round trips, ours
  and bare in turn, at a real-time priority.

## Where the time goes

Start-up. \`dist/cli.cjs\` (1.4 MB) is compiled from a V8 code cache in the user's cache
directory. The MCP SDKs, zod and yaml are in \`dist/vendor.cjs\` (1.5 MB, its own code
cache), compiled only when the CLI first uses one of them; \`node:child_process\` loads at
its first use too, and better-sqlite3 when the database first opens. Over stdio the
first \`initialize\` and \`tools/list\` are answered before the SDK loads
(\`src/server/stdio-first.ts\`, byte for byte the SDK's answers; anything else goes to the
SDK), and the SDK loads just after the tool list is out, before the first call needs it.
What remains before the first answer is Node's own start, reading and deserialising the
CLI bundle (about half of it), the policy and the engine.

A tool call. Each call crosses the policy gate: one \`BEGIN IMMEDIATE\` transaction that
reads the project's trust, appends a hash-chained audit row and commits, before the tool
runs; that row is the floor no cache removes (34 µs of the 84 µs a call costs in process,
and most of its system calls: six file locks and two WAL writes). Around it: the rules
that apply to an action are looked up once per loaded policy; the secret store is checked
once per transaction and once per result (a stat of \`secrets.json\`, without a thrown
error when it does not exist); a result is scrubbed copy-on-write, skipping strings
shorter than any secret. Over HTTP a request and the tool call it carries are decided in
that one transaction, reading the project's trust once, and the outcome row rides with
the next commit, so a request costs one commit; the gateway's guards, its own body
reading and the per-request SDK server remain.

The agent runtime's own cost (\`bench/agent.mjs\`, part of \`npm run bench\`), against
the fake model server in both wire formats through the real providers: per step, the
time from a model answer to the next model request with the tool's own run time
taken out (the events, the gate decisions with their audit rows, parsing, the
context estimate); and from a \`shadow_run\` call to its first model request
(dispatch, gate, queue, runner and provider built, \`model:request\` decided). Median
/ p90 over ${val(a.openai.steps)} steps and 30 starts, same machine:

| format | per step | \`shadow_run\` to the first model request |
| --- | --- | --- |
| OpenAI-compatible | ${f2(a.openai.step_ms_median)} / ${f2(a.openai.step_ms_p90)} ms | ${f2(a.openai.first_request_ms_median)} / ${f2(a.openai.first_request_ms_p90)} ms |
| Anthropic | ${f2(a.anthropic.step_ms_median)} / ${f2(a.anthropic.step_ms_p90)} ms | ${f2(a.anthropic.first_request_ms_median)} / ${f2(a.anthropic.first_request_ms_p90)} ms |

${a.pending ? 'Their targets are' : under ? 'Both are under their targets' : 'Not all medians are under their targets'} (2 ms a step, 20 ms to the first request). Most of a
step is the four job events and two audited gate decisions (\`task:tool.<name>\` and
\`model:request\`) written to SQLite.

The outbound relay call's extra cost is mostly that same gate decision: the
\`mcp:call\` row (\`BEGIN IMMEDIATE\`, trust read, hash-chained audit row, commit) is
decided before the call is sent, and it is the floor; the connection's own path (peer
guard, framing) adds the rest. In one run at a real-time priority on the busy machine,
a relay call took 1.58 ms, the same call on a decision made once and reused 1.22 ms, and
the bare client 1.09 ms: the decision is about 0.36 ms of the 0.49 ms between them.

The sandbox's cost per process start is measured apart, by \`node bench/spawn.mjs\`; its
numbers and what they mean are in [the sandbox](sandbox.md#what-it-costs).
`;

const args = process.argv.slice(2);
if (args.includes('--write')) {
  writeFileSync(`${root}docs/performance.md`, text);
  console.log('docs/performance.md rewritten from bench/results/');
} else process.stdout.write(text);
