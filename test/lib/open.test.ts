// The library's handle, in process: options checked before anything opens, reads that
// return the CLI's data, and the CLI user's actions (decide, cancel) on a job of an
// embedded stdio server.
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import t, { type Test } from 'tap';
import { open, ScError } from '../../src/lib/index.js';
import { cli, ROOT, sandbox } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';

const TOKEN = 'lib-token-0123456789abcdef0123456789abcdef';

async function refuses(t: Test, p: Promise<unknown>, code: string, message?: RegExp) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof ScError, `an ScError (${code})`);
  t.equal((err as ScError).code, code);
  if (message) t.match((err as ScError).message, message);
}

t.test('refuses bad options with a clear ScError and opens nothing', async (t) => {
  const sb = sandbox('sc-lib-opts');
  await refuses(t, open({ profile: sb.profile, project: 'project' }), 'SC_BAD_VALUE', /project must be an absolute path/);
  await refuses(t, open({ profile: sb.profile, workspace: 'project' }), 'SC_BAD_VALUE', /workspace must be an absolute path/);
  await refuses(t, open({ profile: 'profile', project: sb.project }), 'SC_BAD_VALUE', /profile must be an absolute path/);
  await refuses(t, open({ profile: sb.profile, project: join(sb.root, 'nothere') }), 'SC_WORKSPACE_INVALID');
  await refuses(t, open({ profile: sb.profile } as never), 'SC_BAD_VALUE', /project must be a non-empty string/);
  await refuses(t, open({ profile: sb.profile, project: sb.project, workspace: sb.project } as never), 'SC_BAD_VALUE', /project or workspace \(its older name\), not both/);
  await refuses(t, open({ profile: sb.profile, project: sb.project, allowWrite: true } as never), 'SC_BAD_VALUE', /unknown option "allowWrite"/);
  const broken = mkdtempSync(join(tmpdir(), 'sc-lib-policy-'));
  cpSync(join(ROOT, 'policy'), broken, { recursive: true });
  const limits = JSON.parse(readFileSync(join(broken, 'limits.json'), 'utf8'));
  limits.tokens.min_length = 'long';
  writeFileSync(join(broken, 'limits.json'), JSON.stringify(limits));
  await refuses(t, open({ profile: sb.profile, workspace: sb.project, policyDir: broken }), 'SC_POLICY_INVALID', /limits\.json/);
  t.notOk(existsSync(sb.profile), 'no profile was created by a refused open');

  const sc = await open({ profile: sb.profile, project: sb.project });
  t.teardown(() => sc.close());
  t.equal(sc.project, sb.project, 'the project in use');
  t.equal(sc.workspace, sb.project, 'also under its older name');
  const older = await open({ profile: sb.profile, workspace: sb.project });
  t.equal(older.project, sb.project, 'workspace, the older name, opens the same project');
  await older.close();
  await refuses(t, sc.serveHttp({ token: 'short' }), 'SC_HTTP_TOKEN_INVALID');
  await refuses(t, sc.serveHttp({ token: TOKEN, host: '0.0.0.0' }), 'SC_HTTP_BIND_INVALID', /loopback/);
  await refuses(t, sc.serveHttp({ token: TOKEN, host: 'localhost' }), 'SC_HTTP_BIND_INVALID');
  await refuses(t, sc.serveHttp({ token: TOKEN, allowedHosts: ['*.example.com'] }), 'SC_HTTP_HOST_INVALID');
  await refuses(t, sc.serveHttp({ token: TOKEN, allowApprovals: true }), 'SC_USAGE', /allowApprovals needs allowWrite/);
  await refuses(t, sc.serveHttp({} as never), 'SC_HTTP_TOKEN_INVALID', /always requires a bearer token/);
  await refuses(t, sc.decide('appr_nothing', 'maybe' as never), 'SC_BAD_VALUE');
});

t.test('a host policy directory is validated and used, never widened by an option', async (t) => {
  const sb = sandbox('sc-lib-policy');
  const stricter = mkdtempSync(join(tmpdir(), 'sc-lib-policy-'));
  cpSync(join(ROOT, 'policy'), stricter, { recursive: true });
  const limits = JSON.parse(readFileSync(join(stricter, 'limits.json'), 'utf8'));
  limits.tokens.min_length = 64;
  writeFileSync(join(stricter, 'limits.json'), JSON.stringify(limits));
  const sc = await open({ profile: sb.profile, workspace: sb.project, policyDir: stricter });
  t.teardown(() => sc.close());
  await refuses(t, sc.serveHttp({ token: TOKEN }), 'SC_HTTP_TOKEN_INVALID', /64-/);
  const status = await sc.status();
  t.not(status.policy.hash, (await (await open({ profile: sb.profile, workspace: sb.project })).status()).policy.hash, 'the host policy has its own hash in status and audit rows');
});

t.test('reads return the data the CLI prints with --json', async (t) => {
  const sb = sandbox('sc-lib-reads');
  const sc = await open({ profile: sb.profile, workspace: sb.project });
  t.teardown(() => sc.close());
  t.match(await sc.status(), { project: { path: sb.project, trusted: false }, profile: { path: sb.profile }, engine: { mode: 'temporary' } });
  t.same(await sc.approvals(), []);
  t.same(await sc.jobs(), { items: [], next_cursor: null });
  const catalog = await sc.catalog();
  t.equal(catalog.project, sb.project);
  t.same(catalog.definitions, [], 'no definition');
  t.match(await sc.auditVerify(), { ok: true });
  await refuses(t, Promise.resolve().then(() => sc.events('job_nothere')), 'SC_JOB_NOT_FOUND');
  await refuses(t, sc.review('task_nothere'), 'SC_TASK_NOT_FOUND');
  await refuses(t, sc.rollback('task_nothere'), 'SC_TASK_NOT_FOUND');
  await refuses(t, Promise.resolve().then(() => sc.why('../outside.txt')), 'SC_PATH_OUTSIDE');
  t.same(await sc.why('src/a.js'), { path: 'src/a.js', changes: [] });
  await sc.close();
  await refuses(t, sc.status(), 'SC_USAGE', /closed/);
});

/** A line-oriented JSON-RPC peer on the two streams an embedded stdio server uses. */
function peer() {
  const input = new PassThrough();
  const output = new PassThrough();
  const answers = new Map<number, (v: any) => void>();
  let buf = '';
  output.on('data', (d) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop() as string;
    for (const l of lines) {
      const m = JSON.parse(l);
      if (m.id !== undefined) answers.get(m.id)?.(m);
    }
  });
  let id = 0;
  const request = (method: string, params: unknown) =>
    new Promise<any>((resolve) => {
      answers.set(++id, resolve);
      input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  return { input, output, request, notify: (method: string) => input.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`) };
}

t.test('the host decides and cancels jobs of its embedded stdio server; close() ends it', async (t) => {
  const sb = sandbox('sc-lib-decide');
  await cli(sb, ['--project', sb.project, 'trust', '--level', 'workspace']);
  const sc = await open({ profile: sb.profile, workspace: sb.project, env: { PATH: process.env.PATH as string }, name: 'tests' });
  t.teardown(() => sc.close());
  const p = peer();
  const server = await sc.serveStdio({ input: p.input, output: p.output, allowWrite: true });
  t.match(server.owner, /^stdio:\d+:host-\d+$/);
  await p.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
  p.notify('notifications/initialized');
  const call = async (argv: string[]) => (await p.request('tools/call', { name: 'shadow_test', arguments: { command: argv } })).result.structuredContent as { job_id: string; approval: { id: string } };

  const echo = await call(['echo', 'decided-by-the-host']);
  const pending = await sc.approvals();
  t.same(fields(pending, ['id', 'kind', 'owner']), [{ id: echo.approval.id, kind: 'command', owner: server.owner }], 'the one pending approval');
  t.match(pending[0]!.action, { cwd: sb.project }, 'the record the terminal shows');
  t.same(pending[0]!.action.argv, ['echo', 'decided-by-the-host'], 'with its exact argv');
  t.match(await sc.decide(echo.approval.id, 'approve'), { id: echo.approval.id, state: 'approved', decided_by: 'host:tests' });
  await refuses(t, sc.decide(echo.approval.id, 'deny'), 'SC_APPROVAL_NOT_PENDING');
  while (!['succeeded', 'failed'].includes((await sc.jobs()).items.find((j) => j.id === echo.job_id)?.state ?? '')) await new Promise((r) => setTimeout(r, 25));
  t.match((await sc.jobs()).items.find((j) => j.id === echo.job_id), { state: 'succeeded', exit_code: 0, answer: null });
  const kinds = sc.events(echo.job_id).items.map((e) => e.kind);
  t.ok(kinds.includes('approval_approved'), `the job's events show the decision (${kinds.join(', ')})`);

  const waiting = await call(['echo', 'never-approved']);
  t.match(await sc.cancel(waiting.job_id), { id: waiting.job_id, state: 'cancelled' });
  t.same(await sc.approvals(), [], 'a cancelled job leaves nothing pending');

  await server.close();
  await server.closed;
  await refuses(t, sc.cancel(echo.job_id), 'SC_JOB_NOT_RUNNING', /already ended/);
  await refuses(t, sc.cancel('job_nosuchjob'), 'SC_JOB_NOT_FOUND');
});

t.test('docs/library.md documents every export and every method of the handle', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');
  const lib = await import('../../src/lib/index.js');
  for (const name of Object.keys(lib)) t.match(doc, new RegExp(`\\b${name}\\b`), `export ${name}`);
  const methods = Object.getOwnPropertyNames(lib.Shadowcode.prototype).filter((m) => m !== 'constructor' && !['live', 'data', 'track', 'ownJob'].includes(m));
  t.ok(methods.length >= 15, `the handle's methods (${methods.join(', ')})`);
  for (const m of methods) t.match(doc, new RegExp(`sc\\.${m}\\b`), `sc.${m}`);
});
