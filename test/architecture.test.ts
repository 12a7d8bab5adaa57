// Architectural rules, written as tests: the layers of src/, the one gate, and
// the one door to generated validators.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { ROOT } from './fixtures/env.js';

const SRC = join(ROOT, 'src');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}
// The console's page (src/console/page) runs in the browser, not in Node: its fetch() is the page
// calling its own server, so the Node rules below (capabilities, raw reads) do not apply to it.
const PAGE = 'console/page/';
const files = walk(SRC).map((abs) => ({ abs, rel: relative(SRC, abs), text: readFileSync(abs, 'utf8') })).filter((f) => !f.rel.startsWith(PAGE));
const pageFiles = walk(join(SRC, PAGE));

function imports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'([^']+)'/g)) out.push(m[1] as string);
  return out;
}

// Lowest first. An import may point to its own layer or any layer below it. Telemetry sits under the
// policy: the gate and every layer above report to it (src/telemetry/hooks.ts), and it reports to nothing.
// The operations every surface shares (src/ops) sit under the surfaces.
// The agent runtime (loop, native tools, providers, runners) sits on the engine and the client; the task
// contract they share with the engine and the client is engine/task-contract.ts, in the engine layer.
// The console (src/console) is a channel of the CLI user built on the CLI's commands, so it sits above
// them; the command table loads its command module lazily, the one import allowed to point up (UP_LOADS).
const LAYERS = ['base', 'transport', 'store', 'telemetry', 'policy', 'catalog', 'engine', 'register', 'client', 'agent', 'ops', 'server', 'cli', 'console', 'lib'];
const UP_LOADS: Record<string, string> = { 'cli/commands/index.ts': 'console/command.ts' };
function layerOf(rel: string): string {
  const top = rel.split('/')[0] as string;
  return LAYERS.includes(top) ? top : 'base';
}

t.test('imports in src/ only point down the layer list', async (t) => {
  for (const f of files) {
    for (const spec of imports(f.text).filter((s) => s.startsWith('.'))) {
      const target = relative(SRC, resolve(dirname(f.abs), spec));
      if (target.startsWith('..')) continue; // gen/ and package files
      if (UP_LOADS[f.rel] === target.replace(/\.js$/, '.ts') && new RegExp(`import\\(\\s*'${spec.replace(/[.]/g, '\\.')}'`).test(f.text)) continue;
      const from = LAYERS.indexOf(layerOf(f.rel));
      const to = LAYERS.indexOf(layerOf(target));
      t.ok(to <= from, `${f.rel} (${layerOf(f.rel)}) may import ${target} (${layerOf(target)})`);
    }
  }
});

t.test('only src/schema/validate.ts imports the generated validators', async (t) => {
  const importers = files.filter((f) => imports(f.text).some((s) => s.includes('gen/validators'))).map((f) => f.rel);
  t.same(importers, ['schema/validate.ts']);
});

t.test('only the gate mints tickets', async (t) => {
  const minting = files.filter((f) => /\bmintTicket\b/.test(f.text)).map((f) => f.rel).sort();
  t.same(minting, ['policy/gate.ts', 'ticket.ts']);
});

// The gate is src/policy/gate.ts: enforce (one request) and admit (requests arriving together, as an
// HTTP request and the tool call it carries). Both must end in the same place: decision rows appended,
// then tickets minted. No other module may write a decision row or hold a ticket it did not get from there.
t.test('decision rows are written only by the gate, and its tickets are minted after they are appended', async (t) => {
  const writers = files.filter((f) => /['"]decision['"]/.test(f.text) && /\bappendAudit\w*\(/.test(f.text)).map((f) => f.rel);
  t.same(writers, ['policy/gate.ts'], 'only the gate appends decision rows');
  const gate = files.find((f) => f.rel === 'policy/gate.ts')!.text;
  const mints = [...gate.matchAll(/\bmintTicket\(/g)].map((m) => m.index as number);
  t.equal(mints.length, 1, 'one place mints tickets');
  const admitAt = gate.indexOf('export function admit(');
  const appendAt = gate.indexOf('appendAuditRows(', admitAt);
  t.ok(admitAt >= 0 && appendAt > admitAt && (mints[0] as number) > appendAt, 'inside admit, after the rows are appended');
  const enforceBody = gate.slice(gate.indexOf('export async function enforce'));
  t.match(enforceBody, /admit\(env, \[request\]\)/, 'enforce decides through admit');
  for (const f of files.filter((f) => f.rel !== 'policy/gate.ts')) {
    t.notMatch(f.text, /\bdecisionRow\b|\bauthorize\([^)]*\)[^\n]*mintTicket/, `${f.rel} builds no decision of its own`);
  }
});

/** Bodies of the functions and methods whose parameters include `ticket: GateTicket`. */
function ticketTakers(text: string): Array<{ name: string; body: string }> {
  const out: Array<{ name: string; body: string }> = [];
  // A header ends its line with the opening brace of the body (return types may hold braces too).
  const header = /(?:function\s+(\w+)|^\s+(?:async\s+)?(\w+))\s*\(([^)]*)\)[^\n;]*\{$/gm;
  for (const m of text.matchAll(header)) {
    if (!/\bticket: GateTicket\b/.test(m[3] as string)) continue;
    let depth = 1;
    let i = (m.index as number) + m[0].length;
    while (depth > 0 && i < text.length) depth += text[i] === '{' ? 1 : text[i] === '}' ? -1 : 0, i++;
    out.push({ name: (m[1] ?? m[2]) as string, body: text.slice((m.index as number) + m[0].length, i) });
  }
  return out;
}

t.test('every executor entry point takes a ticket and checks it first', async (t) => {
  for (const f of files.filter((f) => !['ticket.ts', 'policy/gate.ts'].includes(f.rel))) {
    for (const fn of ticketTakers(f.text)) t.match(fn.body.trimStart(), /^assertTicket\(ticket, '/, `${f.rel}: ${fn.name} asserts its ticket before anything else`);
  }
  t.ok(files.some((f) => /assertTicket\(ticket, 'cli:trust'\)/.test(f.text)), 'changing trust is an executor');
  t.ok(files.some((f) => /assertTicket\(ticket, 'cli:secret.set'\)/.test(f.text)), 'storing a secret is an executor');
});

// What can start a process or reach the network. A module that uses one must
// be an executor: it imports assertTicket, so its entry points need the gate.
const CAPABILITIES = [/^import (?!type\b)[^\n]*from 'node:(child_process|net|http|https|tls|dgram|worker_threads)'/m, /\bfetch\(/];

// Separate programs the gated executors start (the job supervisor, the SQLite query child). They run
// only as child processes: nothing in src/ may import them, and the build must emit them as entries.
const CHILD_PROGRAMS = ['engine/sqlite-child.ts', 'engine/spawn/supervisor.ts', 'agent/runners/mcp-relay.ts'];

t.test('child programs are started by executors, never imported', async (t) => {
  const build = readFileSync(join(ROOT, 'scripts', 'build.mjs'), 'utf8');
  for (const prog of CHILD_PROGRAMS) {
    t.ok(build.includes(`src/${prog}`), `${prog} is a build entry`);
    const base = prog.split('/').pop()!.replace(/\.ts$/, '.js');
    t.same(files.filter((f) => imports(f.text).some((i) => i.endsWith(`/${base}`))).map((f) => f.rel), [], `nothing imports ${prog}`);
  }
});

// The one spawn point: every process is started in src/engine/spawn/ (where the sandbox is applied
// and the spawn recorded), so nothing else may import a way to start one.
const SPAWN_APIS = /^import (?!type\b)[^\n]*\b(spawn|spawnSync|exec|execSync|execFile|execFileSync|fork)\b[^\n]*from 'node:child_process'/m;
const SPAWN_POINT = ['engine/spawn/index.ts', 'engine/spawn/supervisor.ts'];

t.test('only the spawn point imports the child_process APIs that start a process', async (t) => {
  const importers = files.filter((f) => SPAWN_APIS.test(f.text) || /require\(['"](node:)?child_process['"]\)|import\(['"](node:)?child_process['"]\)/.test(f.text)).map((f) => f.rel).sort();
  t.same(importers, SPAWN_POINT, 'src/engine/spawn/ starts every process');
  t.ok(SPAWN_APIS.test("import { type ChildProcess, spawn } from 'node:child_process';"), 'the rule sees a spawn import beside a type');
});

t.test('process and network capabilities are reachable only through gated executors', async (t) => {
  for (const f of files.filter((f) => !CHILD_PROGRAMS.includes(f.rel))) {
    const uses = CAPABILITIES.filter((re) => re.test(f.text));
    if (uses.length === 0) continue;
    t.match(f.text, /\bassertTicket\(ticket, /, `${f.rel} uses ${uses.map(String).join(', ')} and must be a gated executor`);
  }
});

t.test('no file in src/ silences the type checker', async (t) => {
  for (const f of files) t.notMatch(f.text, /@ts-ignore|@ts-nocheck|eslint-disable/, f.rel);
});

// Reading files someone else controls goes through one bounded primitive (src/util/safe-read.ts):
// a raw read there could block on a FIFO, follow a link out of the project or read /dev/zero forever.
// Only reads of our own files are exempt, each with the reason it is trusted.
const FILE_READS = /\b(readFileSync|readFile|createReadStream|readSync|readdirSync|readdir|opendirSync|opendir)\s*\(|\bopenSync\([^,)]*\)|\bopenSync\([^,]*,\s*'r\+?'/;
const TRUSTED_READS: Record<string, string> = {
  'util/safe-read.ts': 'the primitive itself',
  'policy/load.ts': 'policy/*.json shipped with the package',
  'version.ts': 'the package.json of shadowcode itself',
  'catalog/definition.ts': 'schemas/definition.schema.json shipped with the package, for the known keys',
  'boot.ts': 'dist/cli.cjs of shadowcode itself and its code cache in the user\'s own cache directory',
  'store/settings.ts': 'settings.json in the 0700 profile directory',
  'store/secrets.ts': 'secrets.json in the 0700 profile directory, mode-checked first',
  'engine/daemon/files.ts': 'engine.token in the 0700 profile directory, owner- and mode-checked first',
  'engine/spawn/supervisor.ts': '/proc/<pid>/stat of the processes below the one it supervises',
  'engine/spawn/holds.ts': 'its own registry of placeholders (sandbox-holds.*.json), written by it in the 0700 profile directory',
  'engine/owners.ts': "/proc/PID/stat written by the kernel, and the temp directory's listing for our own run dirs",
  'console/codes.ts': 'console.json in the 0700 profile directory, written 0600 by the console itself',
  'console/server.ts': 'the page files of shadowcode itself, built into dist/console',
  'telemetry/stats.ts': 'its own export counters (telemetry/PID.json), written by it in the 0700 profile directory',
};

t.test('files a project or a user controls are read only through the bounded primitive', async (t) => {
  const readers = files.filter((f) => FILE_READS.test(f.text.replace(/^\s*(\/\/|\*).*$/gm, ''))).map((f) => f.rel).sort();
  t.same(readers, Object.keys(TRUSTED_READS).sort(), 'only the primitive and reads of our own files use raw file reads');
  t.notOk(/^import[^\n]*from 'node:fs\/promises'/m.test(files.filter((f) => !TRUSTED_READS[f.rel]).map((f) => f.text).join('\n')), 'node:fs/promises is not imported around the primitive');
});

// The page shows someone else's text through the same renderer as the terminal: that one module,
// which itself imports nothing, is all it may bundle from src/.
const PAGE_IMPORTS: Record<string, string> = { 'util/inert-text.ts': 'the one renderer of untrusted text, shared with the CLI' };

t.test("the console's page imports nothing but the text renderer, and never parses text as HTML", async (t) => {
  t.ok(pageFiles.length >= 1, 'the page has its code');
  for (const abs of pageFiles) {
    const text = readFileSync(abs, 'utf8');
    const targets = imports(text).map((s) => relative(SRC, resolve(dirname(abs), s)).replace(/\.js$/, '.ts'));
    t.same(targets.filter((x) => !PAGE_IMPORTS[x]), [], `${relative(SRC, abs)} is self-contained but for ${Object.keys(PAGE_IMPORTS).join(', ')}`);
    t.notMatch(text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|\beval\(|new Function/, `${relative(SRC, abs)} renders text as text`);
  }
  for (const rel of Object.keys(PAGE_IMPORTS)) t.same(imports(readFileSync(join(SRC, rel), 'utf8')), [], `${rel}, bundled into the page, imports nothing`);
});
