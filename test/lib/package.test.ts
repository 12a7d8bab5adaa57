/*
 * shadowcode as a library, from the packed tarball installed into a temporary prefix
 * (never from src/): both module forms resolve, the published types compile in a
 * TypeScript consumer, an embedded stdio server and the embedded HTTP gateway of
 * examples/embed.mjs serve the SDK v1 and v2 clients, the host's onApproval approves
 * one command and denies another (audited as the host), and close() leaves no process.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import Database from 'better-sqlite3';
import t from 'tap';
import { ROOT, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';
import { httpClient, TOKEN } from '../fixtures/http.js';
import { installedPackage } from '../fixtures/install.js';
import { v1 } from '../fixtures/sdk-v1.js';

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'sc-lib-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
// This file's own scripts live in `consumer`, beside a link to the shared install's node_modules
// (shared with the packaging test and never written to): `shadowcode` resolves from there as from
// any project that installed it. The declarations are in the package: the shared install emits them
// as `prepare` does in a checkout.
const consumer = join(work, 'consumer');
let prefix = '';

t.before(async () => {
  ({ prefix } = await installedPackage());
  mkdirSync(consumer);
  symlinkSync(join(prefix, 'node_modules'), join(consumer, 'node_modules'), 'dir');
});

const node = (args: string[]) => run(process.execPath, args, { cwd: consumer });

t.test('require and import both resolve to one module with the documented exports', async (t) => {
  // One process does both, as a project mixing the two forms would: require (through createRequire, which
  // resolves the package's `require` condition as a CommonJS file's require does) and import.
  const both = await node([
    '--input-type=module',
    '-e',
    "import { open, ScError } from 'shadowcode'; import { createRequire } from 'node:module'; const req = createRequire(process.cwd() + '/x.js'); const l = req('shadowcode'); console.log(JSON.stringify(Object.keys(l).sort())); console.log(typeof open, ScError === l.ScError)",
  ]);
  const [keys, same] = both.stdout.trim().split('\n');
  t.same(JSON.parse(keys as string), ['ERRORS', 'EXIT', 'ScError', 'Shadowcode', 'open', 'version'], 'require resolves with the documented exports');
  t.equal(same, 'function true', 'import gets the same ScError class as require: one copy of the library');
  t.ok(existsSync(join(prefix, 'node_modules', 'shadowcode', 'dist', 'types', 'src', 'lib', 'index.d.ts')), 'declarations are in the package');
});

t.test('the published types compile in a TypeScript consumer, and reject a wrong call', async (t) => {
  writeFileSync(
    join(consumer, 'consumer.mts'),
    `import { open, ScError, type Approval, type Decision, type Status, type ErrorCode } from 'shadowcode';
const sc = await open({
  profile: '/tmp/p',
  project: '/tmp/w',
  onApproval: (a: Approval): Decision | undefined => (a.kind === 'command' && a.action.argv?.[0] === 'echo' ? 'approve' : undefined),
});
const s: Status = await sc.status();
const code: ErrorCode = 'SC_BAD_VALUE';
const gw = await sc.serveHttp({ token: 'x'.repeat(32), allowWrite: true });
const url: string = gw.url;
const page = await sc.jobs();
const first: string | undefined = page.items[0]?.state;
// @ts-expect-error the gateway always needs a token
await sc.serveHttp({ port: 0 });
// @ts-expect-error a decision is approve or deny
await sc.decide('appr_x', 'maybe');
try { await sc.close(); } catch (e) { if (e instanceof ScError) console.log(e.code satisfies ErrorCode, s.profile.path, url, first, code); }
`,
  );
  writeFileSync(
    join(consumer, 'consumer.cts'),
    `import shadowcode = require('shadowcode');
const p: Promise<shadowcode.Shadowcode> = shadowcode.open({ profile: '/tmp/p', workspace: '/tmp/w' });
// @ts-expect-error the project is required
shadowcode.open({ profile: '/tmp/p' });
// @ts-expect-error project or workspace, its older name, not both
shadowcode.open({ profile: '/tmp/p', project: '/tmp/w', workspace: '/tmp/w' });
void p;
`,
  );
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      // skipLibCheck stays off: our .d.ts files are checked, with @types/node beside them. Only
      // TypeScript's own lib files go unchecked (skipDefaultLibCheck): they are not ours.
      compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: false, skipDefaultLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] },
      files: ['consumer.mts', 'consumer.cts'],
    }),
  );
  // What `tsc -p consumer` checks of ours, through TypeScript's own API: the consumer's files and the
  // package's declarations, each checked whole, with @types/node beside them to resolve against.
  // @types/node's own declarations are not checked file by file (as tsc with skipLibCheck off
  // would): they are not ours, and that check was half of the time this test took.
  const ts = (await import('typescript')).default;
  const config = ts.getParsedCommandLineOfConfigFile(join(consumer, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => t.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  })!;
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
  const ours = program.getSourceFiles().filter((f) => f.fileName.includes('/node_modules/shadowcode/') || !f.fileName.includes('/node_modules/'));
  t.same(ours.filter((f) => !f.isDeclarationFile).map((f) => f.fileName).sort(), [join(consumer, 'consumer.cts'), join(consumer, 'consumer.mts')]);
  t.ok(ours.some((f) => f.fileName.endsWith('/node_modules/shadowcode/dist/types/src/lib/index.d.ts')), "the package's own declarations are among those checked");
  const diagnostics = [
    ...config.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
  ];
  const text = ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => consumer, getNewLine: () => '\n' });
  t.equal(text, '', 'tsc --noEmit reports nothing (the @ts-expect-error lines prove the types are not any)');
});

function liveCommands(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      // The command itself, not the sandbox or the supervisor whose argv also names it.
      if (cmd.startsWith(marker)) found.push(`${pid}: ${cmd}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

t.test('an embedded stdio server serves the SDK v1 and v2 clients', async (t) => {
  const sb = sandbox('sc-lib-stdio');
  writeFileSync(
    join(consumer, 'stdio-host.mjs'),
    `import { open } from 'shadowcode';
const [profile, project] = process.argv.slice(2);
const sc = await open({ profile, project, env: { PATH: process.env.PATH } });
const server = await sc.serveStdio({ input: process.stdin, output: process.stdout });
await server.closed;
await sc.close();
`,
  );
  const args = [join(consumer, 'stdio-host.mjs'), sb.profile, sb.project];
  for (const flavor of ['v1', 'v2'] as const) {
    const { Client: V1Client, StdioClientTransport: V1Transport } = v1();
    const transport = flavor === 'v1' ? new V1Transport({ command: process.execPath, args, cwd: consumer, stderr: 'pipe' }) : new StdioClientTransport({ command: process.execPath, args, cwd: consumer, stderr: 'pipe' });
    const client = flavor === 'v1' ? new V1Client({ name: 'lib-v1', version: '1' }) : new Client({ name: 'lib-v2', version: '2' });
    await client.connect(transport as never);
    const { tools } = await client.listTools();
    t.ok(tools.some((x) => x.name === 'shadow_status'), `${flavor}: tools/list from the embedded server`);
    const status = (await client.callTool({ name: 'shadow_status', arguments: {} })) as { structuredContent: { project: { path: string }; connection: { transport: string; allow_write: boolean } } };
    t.match(status.structuredContent, { project: { path: sb.project }, connection: { transport: 'stdio', allow_write: false } }, `${flavor}: read-only unless the host says allowWrite`);
    const pid = (transport as unknown as { pid: number | null }).pid;
    await client.close();
    if (pid) {
      await new Promise<void>((resolve) => {
        const check = () => (existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z') ? setTimeout(check, 50) : resolve());
        check();
      });
      t.notOk(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z'), `${flavor}: the host process ends with its client`);
    }
  }
});

t.test('examples/embed.mjs: the HTTP gateway with host approvals, audited as the host; close() leaves no process', async (t) => {
  const sb = sandbox('sc-lib-http');
  const bin = join(prefix, 'node_modules', '.bin', 'shadowcode');
  await run(bin, ['--project', sb.project, 'trust', '--level', 'workspace'], { env: sb.env });
  copyFileSync(join(ROOT, 'examples', 'embed.mjs'), join(consumer, 'embed.mjs'));
  const child = spawn(process.execPath, [join(consumer, 'embed.mjs'), '--profile', sb.profile, '--project', sb.project], { cwd: consumer, env: { PATH: process.env.PATH, EMBED_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const lines: Array<Record<string, unknown>> = [];
  const waitLine = (pred: (l: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const look = () => {
        const hit = lines.find(pred);
        if (hit) return resolve(hit);
      };
      child.stdout.on('data', look);
      void exited.then((code) => reject(new Error(`embed.mjs exited ${code}: ${err}`)));
      look();
    });
  child.stdout.on('data', (d) => {
    out += d;
    const parts = out.split('\n');
    out = parts.pop() as string;
    for (const p of parts) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  t.teardown(() => void child.kill('SIGKILL'));
  const { ready } = (await waitLine((l) => 'ready' in l)) as { ready: string };

  const v2 = await httpClient(ready, 'v2-modern');
  const v1 = await httpClient(ready, 'v1');
  const jobOf = async (c: typeof v1, argv: string[]) => ((await c.callTool({ name: 'shadow_test', arguments: { command: argv } })) as { structuredContent: { job_id: string; approval: { id: string } } }).structuredContent;
  const settled = async (c: typeof v1, jobId: string, states: string[]) => {
    for (;;) {
      const r = (await c.callTool({ name: 'shadow_jobs', arguments: { action: 'list' } })) as { structuredContent: { jobs: Array<{ id: string; state: string }> } };
      const job = r.structuredContent.jobs.find((j) => j.id === jobId);
      if (job && states.includes(job.state)) return job;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const ok = await jobOf(v2, ['echo', 'hello-from-embed']);
  t.match(await waitLine((l) => l.approval === ok.approval.id), { decision: 'approve', argv: ['echo', 'hello-from-embed'] }, 'onApproval saw the exact argv');
  t.match(await settled(v2, ok.job_id, ['succeeded', 'failed']), { state: 'succeeded' }, 'the approved command ran');

  const no = await jobOf(v1, ['touch', 'should-not-exist']);
  t.match(await waitLine((l) => l.approval === no.approval.id), { decision: 'deny' });
  t.match(await settled(v1, no.job_id, ['cancelled', 'failed', 'succeeded']), { state: 'cancelled' }, 'the denied command never ran');
  t.notOk(existsSync(join(sb.project, 'should-not-exist')));

  const db = new Database(join(sb.profile, 'state.db'), { readonly: true });
  const rows = (db.prepare("SELECT id, state, decided_by FROM approvals WHERE id IN (?, ?) ORDER BY created_at").all(ok.approval.id, no.approval.id) as Array<{ state: string; decided_by: string }>);
  t.same(fields(rows, ['state', 'decided_by']), [{ state: 'approved', decided_by: 'host:embed-example' }, { state: 'denied', decided_by: 'host:embed-example' }]);
  const audited = (db.prepare('SELECT body FROM audit').all() as Array<{ body: string }>).map((r) => JSON.parse(r.body) as { action?: string; principal?: { kind: string; owner: string } });
  t.ok(audited.some((b) => b.action === 'cli:approvals.approve' && b.principal?.owner === 'host:embed-example'), 'the approval is a gate decision audited as the host');
  t.ok(audited.some((b) => b.action === 'cli:approvals.deny' && b.principal?.owner === 'host:embed-example'), 'so is the denial');
  db.close();

  const long = await jobOf(v2, ['sleep', '3017']);
  await settled(v2, long.job_id, ['running']);
  // 'running' is recorded just before the spawn: wait for the process itself.
  while (liveCommands('sleep 3017').length === 0) await new Promise((r) => setTimeout(r, 50));
  t.equal(liveCommands('sleep 3017').length, 1, 'the approved long command runs, once');
  await v1.close();
  await v2.close();
  child.kill('SIGTERM');
  await waitLine((l) => l.closed === true);
  t.equal(await exited, 0, 'the host exits by itself once closed: nothing keeps it alive');
  t.same(liveCommands('sleep 3017'), [], 'close() cancelled the job and reaped its process');
});
