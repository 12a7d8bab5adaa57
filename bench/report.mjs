// Renders bench/results/{stdio,http,client,spawn,agent}.json as docs/performance.md.
//   node bench/report.mjs          print the page
//   node bench/report.mjs --write  write it to docs/performance.md
// The numbers come only from the result files: run `npm run bench` first.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (n) => JSON.parse(readFileSync(`${root}bench/results/${n}.json`, 'utf8'));
const s = read('stdio');
const h = read('http');
const c = read('client');
const a = read('agent');
const sp = read('spawn');
const under = a.openai.step_ms_median < 2 && a.anthropic.step_ms_median < 2 && a.openai.first_request_ms_median < 20 && a.anthropic.first_request_ms_median < 20;
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const one = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const cell = (st, f = ms) => `${f(st.median)} (${f(st.min)}–${f(st.max)})`;
const ratio = (st) => `${st.median.toFixed(2)}× (${st.min.toFixed(2)}–${st.max.toFixed(2)})`;
const rps = (st) => `${st.median.toFixed(0)} (${st.min.toFixed(0)}–${st.max.toFixed(0)})`;

// [name, value, shown as, goal, met]
const x = (v) => `${v.toFixed(2)}×`;
const TARGETS = [
  ['cold start (checkout)', s.start_ms.ratio.median, x, '≤ 0.6×', (r) => r <= 0.6],
  ['cold start (installed)', s.start_ms.installed_ratio.median, x, '≤ 0.6×', (r) => r <= 0.6],
  ['stdio round trip', s.call_ms.ratio.median, x, '≤ 1.3×', (r) => r <= 1.3],
  ['HTTP latency', h.latency_ms.ratio.median, x, '≤ 1.25×', (r) => r <= 1.25],
  ['HTTP throughput', h.rps.ratio.median, x, '≥ 0.8×', (r) => r >= 0.8],
  ['idle RSS', s.idle_rss_mib.shadowcode.median, (v) => `${v.toFixed(1)} MiB`, '≤ 80 MiB', (r) => r <= 80],
  ['outbound relay call', c.call_ms.ratio.median, x, `≤ ${c.target}×`, (r) => r <= c.target],
  ['sandbox, added per process start', sp.start_ms.added.median, (v) => `${v.toFixed(1)} ms`, `≤ ${sp.target_added_ms} ms`, (r) => r <= sp.target_added_ms],
];

const text = `# Performance

\`npm run bench\` races \`mcp serve\` against minimal servers on the bare SDK v2
(\`bench/bare-stdio-server.mjs\`, \`bench/bare-http-server.mjs\`) in the same run, in
${s.rounds} rounds whose order alternates so that neither side always goes first.
Each cell is the median over rounds of the per-round medians, with the lowest and
highest round in brackets; ratios are taken within a round. \`node bench/report.mjs
--write\` regenerates this page from \`bench/results/\`. This run: Node ${s.node},
${s.cpus} CPUs. On so small a machine the brackets are wide: the HTTP table's
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
the bare SDK v2 \`Client\` calling the same server-everything over stdio; ${c.calls_per_round}
calls per round in ${c.rounds} rounds, alternating which path goes first:

| measure | relay | bare SDK v2 client | ratio |
| --- | --- | --- | --- |
| \`echo\` call over stdio, paced under the frame-rate limit (ms) | ${cell(c.call_ms.relay)} | ${cell(c.call_ms.direct)} | ${ratio(c.call_ms.ratio)} |

Against the targets (medians of this run):

| target | this run | goal | met |
| --- | --- | --- | --- |
${TARGETS.map(([name, v, show, goal, ok]) => `| ${name} | ${show(v)} | ${goal} | ${ok(v) ? 'yes' : 'no'} |`).join('\n')}

Where the time goes. Start-up is one bundle (\`dist/cli.cjs\`) compiled from a V8 code
cache in the user's cache directory, and better-sqlite3 is loaded only when the
database first opens, so the first \`tools/list\` needs neither a 2 MB compile nor the
SQLite driver. Each tool call still crosses the policy gate: one \`BEGIN IMMEDIATE\`
transaction that reads the project's trust, appends a hash-chained audit row and
commits, before the tool runs; that row is the floor no cache removes. Over HTTP a
request and the tool call it carries are decided in that one transaction, and the
outcome row rides with the next commit, so a request costs one commit instead of three;
the gateway's guards, its own body reading and the per-request SDK server remain.

The agent runtime's own cost (\`bench/agent.mjs\`, part of \`npm run bench\`), against
the fake model server in both wire formats through the real providers: per step, the
time from a model answer to the next model request with the tool's own run time
taken out (the events, the gate decisions with their audit rows, parsing, the
context estimate); and from a \`shadow_run\` call to its first model request
(dispatch, gate, queue, runner and provider built, \`model:request\` decided). Median
/ p90 over ${a.openai.steps} steps and 30 starts, same machine:

| format | per step | \`shadow_run\` to the first model request |
| --- | --- | --- |
| OpenAI-compatible | ${f2(a.openai.step_ms_median)} / ${f2(a.openai.step_ms_p90)} ms | ${f2(a.openai.first_request_ms_median)} / ${f2(a.openai.first_request_ms_p90)} ms |
| Anthropic | ${f2(a.anthropic.step_ms_median)} / ${f2(a.anthropic.step_ms_p90)} ms | ${f2(a.anthropic.first_request_ms_median)} / ${f2(a.anthropic.first_request_ms_p90)} ms |

${under ? 'Both are under their targets' : 'Not all medians are under their targets'} (2 ms a step, 20 ms to the first request). Most of a
step is the four job events and two audited gate decisions (\`task:tool.<name>\` and
\`model:request\`) written to SQLite.

The outbound relay call's extra cost is mostly that same gate decision: the
\`mcp:call\` row (\`BEGIN IMMEDIATE\`, trust read, hash-chained audit row, commit) is
decided before the call is sent, and it is the floor; the connection's own path (peer
guard, framing, supervisor pipe) adds the rest.

The sandbox's cost per process start is measured apart, by \`node bench/spawn.mjs\`; its
numbers and what they mean are in [the sandbox](sandbox.md#what-it-costs).
`;

const args = process.argv.slice(2);
if (args.includes('--write')) {
  writeFileSync(`${root}docs/performance.md`, text);
  console.log('docs/performance.md rewritten from bench/results/');
} else process.stdout.write(text);
