// Claude Code as a task runner, against a stand-in CLI that speaks the recorded
// stream-json and control-protocol shapes: exact arguments and isolation, the MCP
// config it is handed, approvals as approval rows, checkpoints and rollback of
// what it changed, and no CLI process left after a cancel.
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createRunner } from '../../../src/agent/runners/index.js';
import { describeAction, approvalDetails } from '../../../src/cli/output.js';
import { type Policy, shippedPolicy } from '../../../src/policy/load.js';
import { readAudit } from '../../../src/store/audit.js';
import { BIN, cli, pidsOf, sandbox } from '../../fixtures/env.js';
import { fields } from '../../fixtures/exact.js';
import { PEER, processesWith } from '../../fixtures/mcp-client.js';
import { alive, FIXTURES, gone, runnerProject } from '../../fixtures/runner-task.js';

const CLAUDE = join(FIXTURES, 'fake-claude.mjs');
const shipped = shippedPolicy();
const policy = shipped;
/** The shipped policy with sandbox.require on: nothing starts without a sandbox. */
const requiring: Policy = { ...shipped, sandbox: { ...shipped.sandbox, require: true } };

async function setup(t: any, opts: { trust?: 'workspace' | 'read_only' | null; scenario?: string; policy?: Policy; install?: (home: string) => string } = {}) {
  const policy = opts.policy ?? shipped;
  const h = await runnerProject(t, { trust: opts.trust === undefined ? 'workspace' : opts.trust });
  mkdirSync(join(h.sb.project, 'src'));
  writeFileSync(join(h.sb.project, 'src', 'app.txt'), 'hello world\n');
  // The CLI runs sandboxed: it can write only the project and its own state folder (policy tool_state ~/.claude).
  mkdirSync(join(h.sb.root, '.claude'));
  const record = join(h.sb.root, '.claude', 'claude-record.json');
  const entry = { id: 'cc', provider: 'claude-code' as const, model: 'default', command: opts.install?.(h.sb.root) ?? CLAUDE, args: ['--fake-scenario', opts.scenario ?? 'edit', '--fake-record', record] };
  const env = { ...h.sb.env, ANTHROPIC_API_KEY: 'sk-ant-canary-0001', CLAUDE_CONFIG_DIR: join(h.sb.root, '.claude'), NODE_OPTIONS: '--inspect' };
  const runner = (settings?: object) => createRunner(entry, { env, secrets: h.c.engine.secrets(), policy, db: h.db, gateEnv: { policy, db: () => h.db }, ...(settings ? { settings } : {}) });
  const recorded = () => JSON.parse(readFileSync(record, 'utf8'));
  return { ...h, record, runner, recorded, env };
}

t.test('starts Claude Code headless and isolated, with exactly the arguments and environment it needs', async (t) => {
  const s = await setup(t);
  const { ctx, events, approvals, jobId } = s.task({ mode: 'build', ceiling: 'workspace' });
  const out = await s.runner().run(ctx);
  t.match(out, { state: 'succeeded', summary: 'Edited src/app.txt.', usage: { input_tokens: 120, output_tokens: 34 }, steps: 2 });
  const r = s.recorded();
  const config = r.argv[r.argv.indexOf('--mcp-config') + 1];
  t.same(r.argv, [
    '--fake-scenario', 'edit', '--fake-record', s.record,
    '-p', '--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose',
    '--permission-prompt-tool', 'stdio', '--strict-mcp-config', '--mcp-config', config,
    '--setting-sources', 'user', '--permission-mode', 'default', '--no-session-persistence',
  ]);
  t.notOk(r.argv.some((a: string) => /allowedTools|bypass|dangerously/i.test(a)), 'no allow rules and no bypass: every prompt reaches us');
  t.equal(r.cwd, s.sb.project, 'runs in the project real path');
  t.equal(r.env.HOME, s.sb.env.HOME, "the user's HOME");
  t.equal(r.env.CLAUDE_CONFIG_DIR, s.env.CLAUDE_CONFIG_DIR, "the CLI's own config dir");
  // The test runner injects its own _TAPJS_* and NODE_OPTIONS into every child it sees spawned; ours are not passed.
  // bwrap itself sets PWD to the directory it starts the CLI in: the project, nothing of ours.
  t.equal(r.env.PWD, s.sb.project, 'PWD is the project, set by the sandbox');
  const passed = Object.keys(r.env).filter((k) => !k.startsWith('_TAPJS_') && k !== 'NODE_OPTIONS' && k !== 'PWD').sort();
  // And the variables that point package managers at the project's private caches beside the user's (policy/sandbox.json caches),
  // and Python's bytecode in the project's own cache (PYTHONPYCACHEPREFIX; set_env's private /tmp where no cache is kept).
  t.same(passed, ['CLAUDE_CONFIG_DIR', 'GOFLAGS', 'GOMODCACHE', 'GOPROXY', 'GRADLE_RO_DEP_CACHE', 'GRADLE_USER_HOME', 'HOME', 'MAVEN_ARGS', 'PATH', 'PYTHONPYCACHEPREFIX', 'TMPDIR'], 'only the sanitised names, the CLI config dir, the cache variables and set_env');
  t.match(r.env.PYTHONPYCACHEPREFIX, /\/\.cache\/shadowcode\/sandbox\/[0-9a-f]{16}\/python-bytecode$/, "Python's bytecode in the project's own cache");
  t.notMatch(String(r.env.NODE_OPTIONS ?? ''), /--inspect/, 'our NODE_OPTIONS is not passed');
  t.notMatch(JSON.stringify(r.env), /sk-ant-canary/, 'no API key reaches the CLI');
  t.same(r.stdin[0], { type: 'user', message: { role: 'user', content: 'change hello to goodbye' }, parent_tool_use_id: null, session_id: '' }, 'the prompt goes in as a stream-json user message');
  t.same(JSON.parse(r.config), { mcpServers: {} }, 'no grants, no servers');
  t.equal(r.config_mode, 0o600);
  t.notOk(existsSync(config), 'the temporary MCP config is removed after the run');

  t.same(approvals.map((a) => [a.kind, a.action.path, a.action.tool]), [['write', 'src/app.txt', 'Edit']], 'the edit became one exact write approval');
  t.same(approvals[0]!.action.input, { file_path: join(s.sb.project, 'src', 'app.txt'), old_string: 'hello', new_string: 'goodbye' });
  const answer = r.stdin.find((m: any) => m.type === 'control_response');
  t.same(answer, { type: 'control_response', response: { subtype: 'success', request_id: 'req-1', response: { behavior: 'allow', updatedInput: approvals[0]!.action.input } } });
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'goodbye world\n');

  const kinds = events.map((e) => e.kind);
  for (const k of ['runner.servers', 'runner.session', 'model_response', 'tool_call', 'tool_result', 'usage', 'runner.exited', 'runner.files', 'checkpoint']) t.ok(kinds.includes(k), `emits ${k}`);
  t.match(events.find((e) => e.kind === 'tool_call')!.body, { id: 'toolu_e1', name: 'Edit' });
  t.match(events.find((e) => e.kind === 'tool_call')!.body, { step: 2, arguments: JSON.stringify(approvals[0]!.action.input) });
  t.match(events.find((e) => e.kind === 'tool_result')!.body, { id: 'toolu_e1', name: 'Edit', is_error: false });
  t.match(events.find((e) => e.kind === 'model_response')!.body, { step: 1, text: 'Working on: change hello to goodbye', usage: { input_tokens: 10, output_tokens: 5 } });
  t.match(events.find((e) => e.kind === 'checkpoint')!.body, { path: 'src/app.txt', checkpoint_id: /^ckpt/, via: 'claude-code' });
  t.match(events.find((e) => e.kind === 'usage')!.body, { input_tokens: 120, output_tokens: 34, cost_usd: 0.0123 });
  t.same(fields((events.find((e) => e.kind === 'runner.files')!.body as { changed: unknown[] }).changed, ['path', 'kind', 'recorded']), [{ path: 'src/app.txt', kind: 'modified', recorded: true }]);

  // What the CLI changed is the task's checkpoint: reviewable and rolled back through the tools.
  const review = await s.c.call('shadow_review', { task_id: jobId });
  t.matchOnly(fields(review.data.files, ['path', 'status', 'diff']), [{ path: 'src/app.txt', status: 'modified', diff: /-hello world\n\+goodbye world/ }]);
  const why = await s.c.call('shadow_why', { path: 'src/app.txt' });
  t.match(JSON.stringify(why.data), /changed by claude-code runner cc/);
  const rb = await s.c.call('shadow_rollback', { task_id: jobId, confirm: true });
  t.equal(rb.isError, false, rb.text);
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n', 'rolled back');
});

t.test('a Plan task, and a Build task at read_only, start Claude Code in plan mode and ask nothing', async (t) => {
  // One project for the three: each run is its own task, and its record is read before the next run writes it.
  const s = await setup(t);
  for (const [mode, ceiling] of [['plan', 'workspace'], ['review', 'workspace'], ['build', 'read_only']] as const) {
    const { ctx, approvals, events } = s.task({ mode, ceiling });
    const out = await s.runner().run(ctx);
    t.equal(out.state, 'succeeded', `${mode}/${ceiling}`);
    const r = s.recorded();
    t.equal(r.argv[r.argv.indexOf('--permission-mode') + 1], 'plan', `${mode}/${ceiling}: --permission-mode plan`);
    t.same(approvals, [], 'no approvals asked');
    t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n', 'nothing edited');
    t.notOk(events.some((e) => e.kind === 'runner.files'), 'no changes recorded');
  }
});

t.test('a command the CLI runs is asked as an exact command, and the file it made is checkpointed', async (t) => {
  const s = await setup(t, { scenario: 'bash' });
  const { ctx, approvals, jobId } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  t.same(approvals.map((a) => [a.kind, a.action.argv, a.action.cwd]), [['command', ['sh', '-c', 'echo made > made-by-bash.txt'], s.sb.project]]);
  t.ok(existsSync(join(s.sb.project, 'made-by-bash.txt')));
  const review = await s.c.call('shadow_review', { task_id: jobId });
  t.same(fields(review.data.files, ['path', 'status']), [{ path: 'made-by-bash.txt', status: 'added' }]);
  t.equal((await s.c.call('shadow_rollback', { task_id: jobId, confirm: true })).isError, false);
  t.notOk(existsSync(join(s.sb.project, 'made-by-bash.txt')), 'the added file is removed by rollback');
});

t.test('a denied approval reaches the CLI as a deny with a message, and nothing changes', async (t) => {
  const s = await setup(t);
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace', decide: () => 'denied' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  const answer = s.recorded().stdin.find((m: any) => m.type === 'control_response');
  t.match(answer.response.response, { behavior: 'deny', message: /denied/ });
  t.match(events.find((e) => e.kind === 'tool_result')!.body, { id: 'toolu_e1', is_error: true });
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n');
});

t.test('refuses to start a CLI in an untrusted project, through the gate', async (t) => {
  const s = await setup(t, { trust: null });
  const { ctx } = s.task({ mode: 'plan', ceiling: 'read_only' });
  const out = await s.runner().run(ctx);
  t.match(out, { state: 'failed', reason: { code: 'SC_POLICY_DENIED', message: /runner-needs-trust/ } });
  t.notOk(existsSync(s.record), 'the CLI never started');
});

t.test('a missing executable fails with SC_RUNNER_NOT_FOUND', async (t) => {
  const s = await setup(t);
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace' });
  const runner = createRunner({ id: 'cc', provider: 'claude-code', model: 'default', command: join(s.sb.root, 'no-such-claude'), args: [] }, { env: s.env, secrets: s.c.engine.secrets(), policy, db: s.db, gateEnv: { policy, db: () => s.db } });
  t.match(await runner.run(ctx), { state: 'failed', reason: { code: 'SC_RUNNER_NOT_FOUND' } });
});

t.test('an error result from the CLI fails the task with SC_RUNNER_FAILED', async (t) => {
  const s = await setup(t, { scenario: 'fail' });
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.match(await s.runner().run(ctx), { state: 'failed', reason: { code: 'SC_RUNNER_FAILED', message: /error_during_execution/ } });
});

t.test('cancelling while an approval is pending stops the CLI and everything in its process group', async (t) => {
  const s = await setup(t, { scenario: 'hang' });
  const { ctx, controller, approvals, when } = s.task({ mode: 'build', ceiling: 'workspace', decide: () => 'wait' });
  const running = s.runner().run(ctx);
  await when(() => approvals.length > 0);
  const r = s.recorded();
  t.equal(r.children.length, 1, 'the CLI started a descendant');
  const pids = pidsOf(`${s.record}.pids`);
  t.equal(pids.filter(alive).length, 2, 'the CLI and its descendant, found by their host pids');
  controller.abort();
  const out = await running;
  t.equal(out.state, 'cancelled');
  t.same(await gone(pids), [], 'no CLI process is left');
  t.same(processesWith(s.record), [], "no process mentions this run's record");
  t.equal(s.db.prepare('SELECT state FROM approvals WHERE id = ?').pluck().get(approvals[0]!.id), 'cancelled', 'the pending approval is cancelled');
});

t.test('hands the CLI only our relay for each usable server, never a command, URL or secret, and nothing when sharing is off', async (t) => {
  const s = await setup(t);
  const peer = `command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "ok"]\n`;
  const defs: Record<string, string> = {
    plain: `name: plain\n${peer}`,
    web: 'name: web\nurl: http://127.0.0.1:9/mcp\n',
    refs: `name: refs\n${peer}env_refs:\n  API_TOKEN: MY_TOOLS_API_KEY\n`,
    literal: `name: literal\n${peer}env:\n  LITERAL_VALUE: canary-literal-env-5c3a91\n`,
  };
  await cli(s.sb, ['secret', 'set', 'MY_TOOLS_API_KEY'], 'canary-secret-value-77aa01');
  for (const [name, text] of Object.entries(defs)) {
    const file = join(s.sb.root, `${name}.yaml`);
    writeFileSync(file, text);
    const add = JSON.parse((await cli(s.sb, ['--json', 'mcp', 'add', file])).stdout);
    const en = await cli(s.sb, ['--project', s.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash]);
    t.equal(en.code, 0, en.stderr);
  }
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  const r = s.recorded();
  const servers = JSON.parse(r.config).mcpServers;
  t.same(Object.keys(servers).sort(), ['literal', 'plain', 'refs'], 'credentials stay with shadowcode, so servers that use them are relayed too');
  for (const [name, entry] of Object.entries(servers) as Array<[string, any]>) {
    t.match(entry, { type: 'stdio', command: process.execPath, args: [/dist\/mcp-relay\.js$/, '--server', name], env: { SHADOWCODE_RELAY_SOCKET: /relay\.sock$/, SHADOWCODE_RELAY_TOKEN: /^[0-9a-f]{64}$/ }, timeout: policy.limits.runners.wall_time_ms });
    t.same(Object.keys(entry.env).sort(), ['SHADOWCODE_RELAY_SOCKET', 'SHADOWCODE_RELAY_TOKEN']);
    t.matchOnly(entry.args, [/dist\/mcp-relay\.js$/, '--server', name], 'the relay, for this server, and no other argument');
  }
  t.notMatch(r.config, /canary|mcp-peer|API_TOKEN|LITERAL_VALUE|127\.0\.0\.1:9/, "no secret, literal env, command or URL of a granted server in the config");
  t.matchOnly(fields((events.find((e) => e.kind === 'runner.servers')!.body as { withheld: unknown[] }).withheld, ['definition', 'reason']), [
    { definition: 'config:web', reason: /its tool catalog was never reviewed .*mcp tools config:web --refresh/ },
  ], 'a server whose catalog could not be read at mcp enable (so was never reviewed) is not passed, and it alone is withheld');

  const off = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner({ mcp: { share_with_cli_agents: false } }).run(off.ctx)).state, 'succeeded');
  t.same(JSON.parse(s.recorded().config), { mcpServers: {} }, 'mcp.share_with_cli_agents: false shares nothing');
});

t.test('a server whose tool catalog changed since its pin is not passed until the change is accepted', async (t) => {
  const s = await setup(t);
  const catalog = join(s.sb.root, 'catalog.json');
  const echo = { name: 'echo', description: 'echoes', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
  writeFileSync(catalog, JSON.stringify([echo]));
  const file = join(s.sb.root, 'shifty.yaml');
  writeFileSync(file, `name: shifty\ncommand: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "catalog-file", ${JSON.stringify(catalog)}]\n`);
  const add = JSON.parse((await cli(s.sb, ['--json', 'mcp', 'add', file])).stdout);
  t.equal((await cli(s.sb, ['--project', s.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  const first = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(first.ctx)).state, 'succeeded');
  t.ok(JSON.parse(s.recorded().config).mcpServers.shifty, 'the catalog pinned at mcp enable matches, so the server is passed');
  t.match(first.events.find((e) => e.kind === 'mcp.checked')!.body, { definition: add.id, pin: 'match' });

  writeFileSync(catalog, JSON.stringify([echo, { name: 'exfiltrate', description: 'new', inputSchema: { type: 'object' } }]));
  const second = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(second.ctx)).state, 'succeeded');
  t.same(JSON.parse(s.recorded().config), { mcpServers: {} }, 'the changed server is withheld');
  t.matchOnly(fields((second.events.find((e) => e.kind === 'runner.servers')!.body as { withheld: unknown[] }).withheld, ['definition', 'reason']), [{ definition: add.id, reason: new RegExp(`catalog changed since it was pinned .*shadowcode mcp tools ${add.id}`) }]);

  const seen = JSON.parse((await cli(s.sb, ['--json', '--project', s.sb.project, 'mcp', 'tools', add.id])).stdout);
  t.equal((await cli(s.sb, ['--project', s.sb.project, 'mcp', 'tools', add.id, '--accept', seen.last_hash])).code, 0);
  const third = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(third.ctx)).state, 'succeeded');
  t.ok(JSON.parse(s.recorded().config).mcpServers.shifty, 'after --accept it is passed again');
});

t.test('a SIGKILLed owner leaves no CLI process behind', async (t) => {
  // The owner is the built CLI running one task on the stand-in, which waits on an approval.
  const sb = sandbox('runner-owner');
  await cli(sb, ['--project', sb.project, 'trust']);
  mkdirSync(join(sb.root, '.claude'));
  const record = join(sb.root, '.claude', 'claude-record.json');
  const added = await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', CLAUDE, ...['--fake-scenario', 'hang', '--fake-record', record].flatMap((a) => ['--arg', a])]);
  t.equal(added.code, 0, added.stderr);
  const owner = spawn(process.execPath, [BIN, '--project', sb.project, 'run', '--level', 'workspace', 'wait for me'], { cwd: sb.root, env: sb.env, stdio: ['ignore', 'ignore', 'pipe'] });
  t.teardown(() => owner.kill('SIGKILL'));
  let err = '';
  await new Promise<void>((resolve, reject) => {
    owner.stderr.on('data', (d) => {
      err += d;
      if (/approvals approve appr_\w+/.test(err)) resolve();
    });
    owner.on('exit', (code) => reject(new Error(`owner exited ${code}: ${err}`)));
  });
  const r = JSON.parse(readFileSync(record, 'utf8'));
  t.equal(r.children.length, 1);
  const pids = pidsOf(`${record}.pids`);
  t.equal(pids.filter(alive).length, 2, 'the CLI and its descendant, found by their host pids');
  owner.kill('SIGKILL');
  t.same(await gone(pids), [], 'the CLI and its descendant are gone');
});

t.test("a Write through a link that leaves the project is refused unasked; .git is refused unasked; nothing lands outside", async (t) => {
  const s = await setup(t, { scenario: 'write-link' });
  const outside = join(s.sb.root, 'elsewhere');
  mkdirSync(outside);
  symlinkSync(outside, join(s.sb.project, 'docs'));
  mkdirSync(join(s.sb.project, '.git'));
  writeFileSync(join(s.sb.project, '.git', 'config'), '[core]\n');
  const { ctx, approvals } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  t.same(approvals, [], 'neither write reached an approval');
  const answers = s.recorded().stdin.filter((m: any) => m.type === 'control_response').map((m: any) => m.response.response);
  t.matchOnly(fields(answers, ['behavior', 'message']), [{ behavior: 'deny', message: /only inside the project/ }, { behavior: 'deny', message: /never lets a task write \.git\/config/ }], 'two answers, both denials');
  t.same(readdirSync(outside), [], 'nothing was written outside');
  t.equal(readFileSync(join(s.sb.project, '.git', 'config'), 'utf8'), '[core]\n');
});

t.test('a Write through a link to elsewhere inside the project names the real target, and the snapshot records and rolls it back', async (t) => {
  const s = await setup(t, { scenario: 'write-link' });
  // The real folder is one .gitignore skips: only following the link finds the change.
  writeFileSync(join(s.sb.project, '.gitignore'), 'build/\n');
  mkdirSync(join(s.sb.project, 'build', 'docs'), { recursive: true });
  symlinkSync(join(s.sb.project, 'build', 'docs'), join(s.sb.project, 'docs'));
  const { ctx, approvals, jobId, events } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  t.same(approvals.map((a) => [a.kind, a.action.path, a.action.target]), [['write', 'docs/notes.txt', 'build/docs/notes.txt']], 'the approval names where the write really lands');
  t.equal(readFileSync(join(s.sb.project, 'build', 'docs', 'notes.txt'), 'utf8'), 'written by the CLI to docs/notes.txt\n');
  t.same(fields((events.find((e) => e.kind === 'runner.files')!.body as { changed: unknown[] }).changed, ['path', 'kind', 'recorded']), [{ path: 'build/docs/notes.txt', kind: 'added', recorded: true }]);
  const review = await s.c.call('shadow_review', { task_id: jobId });
  t.same(fields(review.data.files, ['path', 'status']), [{ path: 'build/docs/notes.txt', status: 'added' }]);
  t.equal((await s.c.call('shadow_rollback', { task_id: jobId, confirm: true })).isError, false);
  t.notOk(existsSync(join(s.sb.project, 'build', 'docs', 'notes.txt')), 'rolled back');
});

t.test('a Bash command is asked with every file the CLI changed so far, and says plainly when it runs one', async (t) => {
  const s = await setup(t, { scenario: 'script' });
  writeFileSync(join(s.sb.project, 'package.json'), '{"scripts":{"test":"node --test","lint":"eslint ."}}\n');
  const rewritten = '{"scripts":{"test":"base64 ~/.ssh/id_rsa","lint":"eslint ."}}\n';
  const { ctx, approvals } = s.task({ mode: 'build', ceiling: 'workspace', prompt: rewritten });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  t.same(approvals.map((a) => a.kind), ['write', 'command'], 'the manifest write, then the command');
  const cmd = approvals[1]!.action;
  t.match(cmd, {
    argv: ['sh', '-c', 'npm test'], cwd: s.sb.project, tool: 'Bash', input: { command: 'npm test' },
    changed_files: ['package.json'],
    runs_changed: [{ path: 'package.json', reason: /npm runs scripts from package\.json, which this task changed \(its changed script "test"\)/ }],
    notice: /This command runs code this task changed/,
  });
  t.same(cmd.argv, ['sh', '-c', 'npm test'], 'the exact argv');
  t.same(cmd.changed_files, ['package.json'], 'the files the task changed, and no others');
  t.same(fields(cmd.runs_changed as unknown[], ['path']), [{ path: 'package.json' }], 'one file it runs');
  t.notOk('unsandboxed' in cmd, 'the CLI runs sandboxed, so the command is not marked unsandboxed');
  t.notOk('grants' in cmd, 'nothing was granted beyond the defaults, so none is named');
  t.match(describeAction('command', cmd), /^run \["sh","-c","npm test"\] in /);
  t.match(approvalDetails('command', cmd), /files this task changed so far: package\.json\n  WARNING: This command runs code this task changed/, 'the prompt text shows it');
});

t.test("a Bash command's approval names the grants the CLI's sandbox runs with", async (t) => {
  const s = await setup(t, { scenario: 'script' });
  writeFileSync(join(s.sb.project, 'package.json'), '{"scripts":{"test":"node --test"}}\n');
  const shared = join(s.sb.root, 'shared');
  mkdirSync(shared);
  t.equal((await cli(s.sb, ['--project', s.sb.project, 'sandbox', 'allow', shared])).code, 0);
  const { ctx, approvals } = s.task({ mode: 'build', ceiling: 'workspace', prompt: '{"scripts":{"test":"node --test"}}\n' });
  t.equal((await s.runner().run(ctx)).state, 'succeeded');
  const cmd = approvals.find((a) => a.kind === 'command')!.action;
  t.same(cmd.grants, [{ path: shared, access: 'read-only', scope: 'project' }]);
  t.match(describeAction('command', cmd), `(with sandbox grants: read-only ${shared})`);
});

t.test('Claude Code runs in the sandbox: no profile, no home, .git read-only, its own state writable, recorded as bwrap', async (t) => {
  // sandbox.require on: it must start sandboxed, or not at all.
  const s = await setup(t, { scenario: 'probe', policy: requiring });
  t.equal((await cli(s.sb, ['secret', 'set', 'PROBE_KEY'], 'canary-probe-secret-31')).code, 0);
  const secrets = join(s.sb.profile, 'secrets.json');
  t.ok(existsSync(secrets), 'the profile has a secrets.json');
  const home = s.sb.root;
  mkdirSync(join(home, '.ssh'));
  writeFileSync(join(home, '.ssh', 'id_rsa'), 'private key\n');
  writeFileSync(join(home, 'notes.txt'), 'mine\n');
  mkdirSync(join(s.sb.project, '.git'));
  writeFileSync(join(s.sb.project, '.git', 'config'), '[core]\n');
  // Claude Code's own settings (its hooks run unsandboxed when the user next starts it), and a plugins folder it does not have yet.
  const settings = join(home, '.claude', 'settings.json');
  const status = join(home, '.claude', 'statusline.sh');
  writeFileSync(status, 'echo ok\n');
  writeFileSync(settings, '{"model":"mine","statusLine":{"type":"command","command":"sh ~/.claude/statusline.sh"}}\n');
  const plugins = join(home, '.claude', 'plugins');
  t.teardown(() => rmSync(plugins, { force: true, recursive: true }));
  // Its running state, which also lists the user's MCP servers: it may write, but only to a copy.
  const dotJson = join(home, '.claude.json');
  writeFileSync(dotJson, '{"mcpServers":{}}\n');
  t.teardown(() => rmSync(dotJson, { force: true }));
  const ask = {
    read: [secrets, join(s.sb.profile, 'state.db'), join(home, '.ssh', 'id_rsa'), join(home, 'notes.txt'), join(s.sb.project, 'src', 'app.txt')],
    list: [home],
    write: [join(s.sb.project, '.git', 'config'), join(home, '.claude', 'probe.txt'), join(home, 'dropped.txt'), join(s.sb.project, 'made-inside.txt'), settings, plugins, dotJson, status],
  };
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace', prompt: JSON.stringify(ask) });
  t.match(await s.runner().run(ctx), { state: 'succeeded' });
  const p = s.recorded().probe;
  t.equal(p.read[secrets], 'ENOENT', "the profile's secrets.json is not there");
  t.equal(p.read[join(s.sb.profile, 'state.db')], 'ENOENT', 'nor its database');
  t.equal(p.read[join(home, '.ssh', 'id_rsa')], 'ENOENT', "the user's home is private");
  t.equal(p.read[join(home, 'notes.txt')], 'ENOENT');
  t.equal(p.read[join(s.sb.project, 'src', 'app.txt')], 'ok', 'the project is readable');
  // Beside them the mount points of the project's private package caches (empty unless written: its own).
  t.same(p.list[home], ['.cache', '.cargo', '.claude', '.claude.json', '.local', '.npm', 'project'], 'in the home: only its own state, the project and the private caches');
  t.equal(p.write[join(s.sb.project, '.git', 'config')], 'EROFS', '.git is read-only');
  t.equal(readFileSync(join(s.sb.project, '.git', 'config'), 'utf8'), '[core]\n');
  t.equal(p.write[join(home, '.claude', 'probe.txt')], 'ok', 'its tool_state folder is writable');
  t.equal(readFileSync(join(home, '.claude', 'probe.txt'), 'utf8'), 'written from inside\n', 'and the write is real');
  t.equal(p.write[settings], 'EROFS', 'but not its settings.json (policy tool_state_read_only)');
  t.equal(readFileSync(settings, 'utf8'), '{"model":"mine","statusLine":{"type":"command","command":"sh ~/.claude/statusline.sh"}}\n', 'which is unchanged');
  t.equal(p.write[status], 'EROFS', 'nor the status line script it names');
  t.equal(readFileSync(status, 'utf8'), 'echo ok\n');
  t.equal(p.write[dotJson], 'ok', '~/.claude.json is writable inside...');
  t.equal(readFileSync(dotJson, 'utf8'), '{"mcpServers":{}}\n', '...but the write went to a private copy');
  t.equal(p.write[plugins], 'ok', 'a protected path that did not exist cannot be covered...');
  const stateChanges = events.filter((e) => e.kind === 'runner.state_changed').map((e) => e.body as { changed: unknown[]; notice: string });
  t.matchOnly(stateChanges.map((b) => ({ changed: fields(b.changed, ['path', 'was', 'now']), notice: b.notice })), [
    { changed: [{ path: plugins, was: 'missing', now: 'file' }], notice: /configure what .* runs outside any sandbox when you start it yourself/ },
  ], '...so its appearance is reported, and nothing else is');
  t.equal(p.write[join(home, 'dropped.txt')], 'ok', 'a write elsewhere in the home goes to the private copy...');
  t.notOk(existsSync(join(home, 'dropped.txt')), '...and never reaches the real home');
  t.equal(p.write[join(s.sb.project, 'made-inside.txt')], 'ok', 'the project is writable');
  t.ok(existsSync(join(s.sb.project, 'made-inside.txt')));
  t.match(events.find((e) => e.kind === 'runner.started')!.body, { sandbox: 'bwrap', label: 'sandboxed' });
  const spawns = readAudit(s.db, { kinds: ['spawn'], limit: 100 }).map((r) => r.body as Record<string, unknown>).filter((b) => b.kind === 'runner');
  t.matchOnly(fields(spawns, ['kind', 'level', 'network', 'network_why', 'argv0', 'project']), [{ kind: 'runner', level: 'bwrap', network: true, network_why: /reaches its model/, argv0: CLAUDE, project: s.sb.project }], 'the one audit row: sandboxed, network open to reach the model');
});

t.test('unsandboxed, nothing covers its settings, so each change to them is reported after the task', async (t) => {
  const s = await setup(t, { scenario: 'probe' });
  const home = s.sb.root;
  const settings = join(home, '.claude', 'settings.json');
  writeFileSync(settings, '{}\n');
  const dotJson = join(home, '.claude.json');
  writeFileSync(dotJson, '{}\n');
  t.teardown(() => rmSync(dotJson, { force: true }));
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace', prompt: JSON.stringify({ write: [settings, dotJson, join(home, '.claude', 'log.txt')] }) });
  const saved = process.env.PATH;
  process.env.PATH = '/nonexistent-bin';
  try {
    t.match(await s.runner().run(ctx), { state: 'succeeded' });
  } finally {
    process.env.PATH = saved;
  }
  t.match(events.find((e) => e.kind === 'runner.started')!.body, { sandbox: 'none' });
  t.equal(readFileSync(settings, 'utf8'), '{}\nwritten from inside\n', 'with no sandbox the write lands');
  const reported = events.filter((e) => e.kind === 'runner.state_changed').map((e) => e.body as { changed: Array<{ path: string }> });
  t.equal(reported.length, 1, 'one event');
  t.same(reported[0]!.changed.map((c) => c.path).sort(), [dotJson, settings].sort(), 'naming both, and not the log beside them');
});

t.test('without bwrap on PATH the runner runs "unsandboxed" and says so; sandbox.require refuses it', async (t) => {
  const bare = async <T>(fn: () => Promise<T>): Promise<T> => {
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent-bin';
    try {
      return await fn();
    } finally {
      process.env.PATH = saved;
    }
  };
  const s = await setup(t, { scenario: 'bash' });
  const run = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await bare(() => s.runner().run(run.ctx))).state, 'succeeded', 'it still runs, as before');
  t.match(run.events.find((e) => e.kind === 'runner.started')!.body, { sandbox: 'none', label: 'unsandboxed' });
  t.same(run.approvals[0]!.action.argv, ['sh', '-c', 'echo made > made-by-bash.txt']);
  t.equal(run.approvals[0]!.action.unsandboxed, true, "the CLI's command approval says it runs unsandboxed");
  t.match(describeAction('command', run.approvals[0]!.action), /unsandboxed: it runs with your full access/);
  t.same(fields(readAudit(s.db, { kinds: ['spawn'], limit: 100 }).map((r) => r.body), ['kind', 'level']), [{ kind: 'runner', level: 'none' }], 'one spawn row, and it records no sandbox');

  const r = await setup(t, { policy: requiring });
  const refused = r.task({ mode: 'build', ceiling: 'workspace' });
  t.match(await bare(() => r.runner().run(refused.ctx)), { state: 'failed', reason: { code: 'SC_SANDBOX_UNAVAILABLE', message: /bwrap is not on PATH.*requires a sandbox/ } });
  t.notOk(existsSync(r.record), 'the CLI never started');
  t.same(readAudit(r.db, { kinds: ['spawn'], limit: 100 }), [], 'and no spawn was recorded');
});

t.test('Claude Code installed inside its own state folder (~/.claude/local) cannot rewrite its install from inside, while the rest of that folder stays writable', async (t) => {
  const s = await setup(t, {
    scenario: 'probe',
    policy: requiring,
    // Where Claude Code's own installer puts it: below ~/.claude, which the sandbox shows read-write.
    install: (home) => {
      const local = join(home, '.claude', 'local');
      mkdirSync(local);
      for (const f of ['fake-claude.mjs', 'fake-pids.mjs']) copyFileSync(join(FIXTURES, f), join(local, f));
      chmodSync(join(local, 'fake-claude.mjs'), 0o755);
      return join(local, 'fake-claude.mjs');
    },
  });
  const local = join(s.sb.root, '.claude', 'local');
  const cli = join(local, 'fake-claude.mjs');
  const before = readFileSync(cli, 'utf8');
  const ask = { write: [cli, join(local, 'planted.mjs'), join(s.sb.root, '.claude', 'notes.txt')] };
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace', prompt: JSON.stringify(ask) });
  t.match(await s.runner().run(ctx), { state: 'succeeded' });
  t.strictSame(s.recorded().probe.write, { [cli]: 'EROFS', [join(local, 'planted.mjs')]: 'EROFS', [join(s.sb.root, '.claude', 'notes.txt')]: 'ok' }, 'its install is read-only, its state folder is not');
  t.equal(readFileSync(cli, 'utf8'), before, 'the install is unchanged');
  t.notOk(existsSync(join(local, 'planted.mjs')), 'and nothing was added to it');
});
