// Renders bench/results/{stdio,http,client,spawn,agent}.json into the generated blocks of
// docs/performance.md.
//   node bench/report.mjs          print the page as --write would leave it
//   node bench/report.mjs --write  rewrite the generated blocks in docs/performance.md
// The wall-clock numbers come only from the result files: run `npm run bench` first, on an
// idle machine. A result file that is missing shows as "—" (not measured in this run); with
// none at all (a fresh clone) it says so and writes nothing, rather than a page of dashes.
// Only the text between each block's markers (<!-- begin generated NAME: ... --> and
// <!-- end generated NAME -->) is rewritten; everything else on the page (the sections
// measured on a busy machine with bench/profile.mjs, the analysis) is written by hand there.
// A marker missing, doubled or out of order is an error, and nothing is written.
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
  ['sandbox, added per process start (the spawn point alone)', sp.start_ms.added.median, (v) => `${one(v)} ms`, '≤ 15 ms', (r) => r <= 15],
  ['sandbox, added per approved command (call to result)', sp.supervised_ms?.added.median, (v) => `${one(v)} ms`, '≤ 15 ms', (r) => r <= 15],
];

/** The generated blocks, by name: each replaces the text between its two markers. */
const BLOCKS = {
  'wall-clock': `\`npm run bench\` races \`mcp serve\` against minimal servers on the bare SDK v2
(\`bench/bare-stdio-server.mjs\`, \`bench/bare-http-server.mjs\`) in the same run, in
${val(s.rounds)} rounds whose order alternates so that neither side always goes first.
The bare servers answer \`shadow_status\` with the very bytes ours answers (captured from
our server at the start of the run), so a ratio measures overhead, not payload.
Each cell is the median over rounds of the per-round medians, with the lowest and
highest round in brackets; ratios are taken within a round. \`node bench/report.mjs
--write\` rewrites the marked tables of this page from \`bench/results/\`. This run: Node ${val(s.node)},
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
${TARGETS.map(([name, v, show, goal, ok]) => (typeof v !== 'number' ? `| ${name} | — | ${goal} | — |` : `| ${name} | ${show(v)} | ${goal} | ${ok(v) ? 'yes' : 'no'} |`)).join('\n')}${sp.pending || !sp.floor_ms ? '' : `

Of the sandbox's ${one(sp.start_ms.added.median)} ms, ${one(sp.floor_ms.added.median)} ms is what any bwrap sandbox adds on this
machine (every namespace, only \`/usr\`, \`/proc\` and \`/dev\`, started in the same rounds); the
rest is ours: the mounts and checks of [the sandbox](sandbox.md#what-it-costs) and the spawn
point's own work (${f0(sp.own_us)} µs warm in an empty project, more right after a start).${sp.supervised_ms ? ` An approved
command, started the way \`run\`, \`test\` and the engine start one (its spawn row, then the sandbox or
none, from the call to its result: the status, what it created among protected paths and what it left
in its private home and /tmp), takes ${one(sp.supervised_ms.bare.median)} ms bare and ${one(sp.supervised_ms.sandboxed.median)} ms sandboxed, ${one(Math.abs(sp.supervised_ms.added.median))} ms
${sp.supervised_ms.added.median < 0 ? 'less' : 'more'} (pair by pair): sandboxed, shadowcode forks bwrap and supervises it itself (bwrap ends the
sandbox with its owner), while an unsandboxed command needs the node supervisor, a node start-up, to
tie its process group to its owner. So what the sandbox costs (the row above) is paid where that
start-up is saved.` : ''}`}${s.pending ? `

The wall-clock cells above are "—" until \`npm run bench\` runs on an idle machine
and \`node bench/report.mjs --write\` puts its numbers here: wall-clock ratios taken on a
busy machine measure the other load, not the servers.` : ''}`,
  agent: `The agent runtime's own cost (\`bench/agent.mjs\`, part of \`npm run bench\`), against
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
\`model:request\`) written to SQLite.`,
};

const begin = (name) => `<!-- begin generated ${name}: bench/report.mjs --write rewrites this block -->`;
const end = (name) => `\n<!-- end generated ${name} -->`;
const page = `${root}docs/performance.md`;
const fail = (why) => {
  process.stderr.write(`bench/report.mjs: ${why}. Nothing was written.\n`);
  process.exit(1);
};
if (!existsSync(page)) fail('docs/performance.md does not exist');
let text = readFileSync(page, 'utf8');
for (const [name, block] of Object.entries(BLOCKS)) {
  const b = begin(name);
  const e = end(name);
  const count = (m) => text.split(m).length - 1;
  for (const m of [b, e]) {
    if (count(m) !== 1) fail(`docs/performance.md has ${count(m) === 0 ? 'no' : 'more than one'} marker line ${JSON.stringify(m.trim())}; each generated block sits between one begin and one end marker (see the page in git)`);
  }
  const from = text.indexOf(b) + b.length;
  const to = text.indexOf(e);
  if (to < from) fail(`docs/performance.md: the end marker of ${name} comes before its begin marker`);
  text = `${text.slice(0, from)}\n${block}${text.slice(to)}`;
}

const args = process.argv.slice(2);
if (args.includes('--write')) {
  writeFileSync(page, text);
  console.log(`docs/performance.md: its generated blocks (${Object.keys(BLOCKS).join(', ')}) rewritten from bench/results/`);
} else process.stdout.write(text);
