// Codex as a task runner, against a stand-in speaking `codex exec --json`'s JSONL:
// the exact arguments, the sandbox chosen from the task's ceiling, the servers
// passed as -c overrides, events, checkpoints of what it changed, and cancellation.
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createRunner } from '../../../src/agent/runners/index.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { cli, pidsOf, ROOT } from '../../fixtures/env.js';
import { fields } from '../../fixtures/exact.js';
import { PEER } from '../../fixtures/mcp-client.js';
import { httpPeer } from '../../fixtures/mcp-http-peer.js';
import { alive, FIXTURES, gone, runnerProject } from '../../fixtures/runner-task.js';

const CODEX = join(FIXTURES, 'fake-codex.mjs');
const policy = shippedPolicy();

async function setup(t: any, scenario = 'edit', pol = policy) {
  const h = await runnerProject(t);
  mkdirSync(join(h.sb.project, 'src'));
  writeFileSync(join(h.sb.project, 'src', 'app.txt'), 'hello world\n');
  // The CLI runs sandboxed: it can write only the project and its own state folder (policy tool_state ~/.codex).
  mkdirSync(join(h.sb.root, '.codex'));
  const record = join(h.sb.root, '.codex', 'codex-record.json');
  const env = { ...h.sb.env, OPENAI_API_KEY: 'sk-canary-openai-01', CODEX_HOME: join(h.sb.root, '.codex') };
  const runner = createRunner({ id: 'cx', provider: 'codex', model: 'default', command: CODEX, args: ['--fake-scenario', scenario, '--fake-record', record] }, { env, secrets: h.c.engine.secrets(), policy: pol, db: h.db, gateEnv: { policy, db: () => h.db } });
  return { ...h, record, runner, env, recorded: () => JSON.parse(readFileSync(record, 'utf8')) };
}

t.test('runs codex exec --json in the workspace-write sandbox for a Build task, prompt on stdin', async (t) => {
  const s = await setup(t);
  const { ctx, events, jobId } = s.task({ mode: 'build', ceiling: 'workspace' });
  const out = await s.runner.run(ctx);
  t.match(out, { state: 'succeeded', summary: 'Changed hello to goodbye in src/app.txt.', usage: { input_tokens: 2400, output_tokens: 180 }, steps: 1 });
  const r = s.recorded();
  t.same(r.argv, ['--fake-scenario', 'edit', '--fake-record', s.record, 'exec', '--json', '--sandbox', 'workspace-write', '--skip-git-repo-check', '-C', s.sb.project, '-']);
  t.equal(r.prompt, 'change hello to goodbye', 'the prompt goes in on stdin, not in argv');
  t.equal(r.cwd, s.sb.project);
  t.equal(r.env.CODEX_HOME, s.env.CODEX_HOME);
  t.notOk('OPENAI_API_KEY' in r.env, 'no API key from our environment');
  t.match(events.find((e) => e.kind === 'runner.started')!.body, { provider: 'codex', sandbox: 'bwrap', label: 'sandboxed' }, 'codex runs in the sandbox');
  t.same(events.filter((e) => e.kind === 'tool_call').map((e) => e.body.name), ['command', 'file_change']);
  t.match(events.find((e) => e.kind === 'tool_result')!.body, { id: 'item_1', is_error: false, content: 'hello world\n' });
  t.match(events.find((e) => e.kind === 'usage')!.body, { input_tokens: 2400, output_tokens: 180, cached_input_tokens: 1024 });
  const review = await s.c.call('shadow_review', { task_id: jobId });
  t.same(fields(review.data.files, ['path', 'status']), [{ path: 'src/app.txt', status: 'modified' }]);
  t.equal((await s.c.call('shadow_rollback', { task_id: jobId, confirm: true })).isError, false);
  t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n');
});

t.test('Plan, Review and a read_only Build run codex in the read-only sandbox', async (t) => {
  // One project for the three: each run is its own task, and its record is read before the next run writes it.
  const s = await setup(t);
  for (const [mode, ceiling] of [['plan', 'workspace'], ['review', 'workspace'], ['build', 'read_only']] as const) {
    const { ctx } = s.task({ mode, ceiling });
    t.equal((await s.runner.run(ctx)).state, 'succeeded');
    const r = s.recorded();
    t.equal(r.argv[r.argv.indexOf('--sandbox') + 1], 'read-only', `${mode}/${ceiling}`);
    t.equal(readFileSync(join(s.sb.project, 'src', 'app.txt'), 'utf8'), 'hello world\n');
  }
});

t.test('passes our relay as -c mcp_servers overrides, never a granted server command, URL or secret', async (t) => {
  const s = await setup(t);
  await cli(s.sb, ['secret', 'set', 'K'], 'canary-secret-codex-9f');
  // A Streamable HTTP server in this process (the real wire format): only its URL matters here.
  const http = await httpPeer('ok');
  t.teardown(() => http.close());
  const url = http.url;
  const tools = `name: tools\ncommand: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "ok", "a b"]\n`;
  for (const [name, text] of Object.entries({ tools, web: `name: web\nurl: ${url}\n`, keyed: 'name: keyed\ncommand: ["/opt/k"]\nenv_refs:\n  TOKEN: K\n' })) {
    const file = join(s.sb.root, `${name}.yaml`);
    writeFileSync(file, text);
    const add = JSON.parse((await cli(s.sb, ['--json', 'mcp', 'add', file])).stdout);
    t.equal((await cli(s.sb, ['--project', s.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  }
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner.run(ctx)).state, 'succeeded');
  const r = s.recorded();
  const relay = join(ROOT, 'dist', 'mcp-relay.js');
  const secs = Math.ceil(policy.limits.runners.wall_time_ms / 1000);
  const expect = (name: string) => [
    `mcp_servers.${name}.command=${JSON.stringify(process.execPath)}`,
    `mcp_servers.${name}.args=${JSON.stringify([relay, '--server', name])}`,
    new RegExp(`^mcp_servers\\.${name}\\.env=\\{SHADOWCODE_RELAY_SOCKET=".*relay\\.sock", SHADOWCODE_RELAY_TOKEN="[0-9a-f]{64}"\\}$`),
    `mcp_servers.${name}.tool_timeout_sec=${secs}.0`,
    `mcp_servers.${name}.default_tools_approval_mode="approve"`,
  ];
  t.matchOnly(r.overrides, [...expect('tools'), ...expect('web')], 'the HTTP server is relayed too: the CLI never gets its URL, and nothing else is set');
  t.notMatch(JSON.stringify(r.argv), /canary|mcp-peer|\/mcp"|127\.0\.0\.1/, "no granted server's command, URL or secret");
  t.matchOnly(fields((events.find((e) => e.kind === 'runner.servers')!.body as { withheld: unknown[] }).withheld, ['definition', 'reason']), [{ definition: 'config:keyed', reason: /its tool catalog was never reviewed .*mcp tools config:keyed --refresh/ }]);
});

t.test('a failed turn fails the task with SC_RUNNER_FAILED and the CLI message', async (t) => {
  const s = await setup(t, 'fail');
  const { ctx } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.match(await s.runner.run(ctx), { state: 'failed', reason: { code: 'SC_RUNNER_FAILED', message: /401 Unauthorized/ } });
});

t.test('cancelling a running codex stops its whole process group', async (t) => {
  const s = await setup(t, 'hang');
  const { ctx, controller, events, when } = s.task({ mode: 'build', ceiling: 'workspace' });
  const running = s.runner.run(ctx);
  await when(() => events.some((e) => e.kind === 'tool_call'));
  t.equal(s.recorded().children.length, 1, 'the CLI started a descendant');
  const pids = pidsOf(`${s.record}.pids`);
  t.equal(pids.filter(alive).length, 2, 'the CLI and its descendant, found by their host pids');
  controller.abort();
  t.equal((await running).state, 'cancelled');
  t.same(await gone(pids), [], 'no CLI process is left');
});

t.test('a run past its wall time is stopped and fails with SC_LIMIT_REACHED', async (t) => {
  const short = { ...policy, limits: { ...policy.limits, runners: { ...policy.limits.runners, wall_time_ms: 1000 } } };
  const s = await setup(t, 'hang', short);
  const { ctx, events } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.match(await s.runner.run(ctx), { state: 'failed', reason: { code: 'SC_LIMIT_REACHED', message: /wall time of 1000 ms/ } });
  // The CLI may be stopped before it wrote its record; the runner's own event names its pid.
  const pid = events.find((e) => e.kind === 'runner.started')?.body.pid as number;
  t.type(pid, 'number');
  t.same(await gone([pid]), [], 'no CLI process is left');
});
