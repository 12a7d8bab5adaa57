// Coding CLIs reach granted MCP servers only through our relay. The Claude Code and
// Codex stand-ins start whatever their config names with the official SDK client and
// call a tool through it, as the real CLIs do. Each call must wait for the same exact
// approval a native task's call gets; approved, the real server receives it and its
// answer returns to the CLI; denied, the server receives nothing. The config the CLI
// is handed holds no secret value and no granted server's command.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { createRunner } from '../../../src/agent/runners/index.js';
import { shippedPolicy } from '../../../src/policy/load.js';
import { BIN, cli, pidsOf, sandbox, until } from '../../fixtures/env.js';
import { everythingHttp, PEER, processesWith } from '../../fixtures/mcp-client.js';
import { alive, type Decide, FIXTURES, gone, runnerProject } from '../../fixtures/runner-task.js';

const policy = shippedPolicy();
const CANARY = 'canary-relay-secret-4e1d07';
const CLIS = {
  claude: { provider: 'claude-code' as const, command: join(FIXTURES, 'fake-claude.mjs') },
  codex: { provider: 'codex' as const, command: join(FIXTURES, 'fake-codex.mjs') },
};

/**
 * A trusted project with one granted stdio server that logs every method it receives and
 * gets a stored secret: built once for this file (its teardown is the file's), shared by
 * the tests below, each of which reads only what the server received after it began.
 */
let shared: ReturnType<typeof build> | undefined;
async function build() {
  const h = await runnerProject(t);
  mkdirSync(join(h.sb.project, 'src'));
  writeFileSync(join(h.sb.project, 'src', 'app.txt'), 'hello world\n');
  const peerLog = join(h.sb.project, 'peer.log'); // inside the project: the one place the sandboxed server may write
  await cli(h.sb, ['secret', 'set', 'TOOLS_KEY'], CANARY);
  const file = join(h.sb.root, 'tools.yaml');
  writeFileSync(file, `name: tools\ncommand: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "ok"]\nenv:\n  PEER_LOG: ${JSON.stringify(peerLog)}\nenv_refs:\n  API_TOKEN: TOOLS_KEY\n`);
  const add = JSON.parse((await cli(h.sb, ['--json', 'mcp', 'add', file])).stdout);
  const en = await cli(h.sb, ['--project', h.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash]);
  if (en.code !== 0) throw new Error(`mcp enable failed: ${en.stderr}`);
  // The CLIs run sandboxed: each can write only the project and its own state folder (policy tool_state ~/.claude, ~/.codex).
  for (const which of Object.keys(CLIS)) mkdirSync(join(h.sb.root, `.${which}`));
  const log = () => (existsSync(peerLog) ? readFileSync(peerLog, 'utf8').split('\n').filter(Boolean) : []);
  return { ...h, id: add.id as string, log };
}

let runs = 0;
async function setup(which: keyof typeof CLIS) {
  const w = await (shared ??= build());
  const from = w.log().length;
  // A record of its own for each test's CLI, in that CLI's state folder.
  const record = join(w.sb.root, `.${which}`, `${which}-record-${++runs}.json`);
  const runner = (args: Record<string, unknown>) =>
    createRunner(
      { id: which, provider: CLIS[which].provider, model: 'default', command: CLIS[which].command, args: ['--fake-scenario', 'mcp', '--fake-record', record, '--fake-mcp', 'tools/echo', '--fake-mcp-args', JSON.stringify(args)] },
      { env: w.sb.env, secrets: w.c.engine.secrets(), policy, db: w.db, gateEnv: { policy, db: () => w.db } },
    );
  const received = () => w.log().slice(from);
  const recorded = () => JSON.parse(readFileSync(record, 'utf8'));
  return { ...w, runner, received, recorded, record };
}

/** Sends one hello line to a relay socket; resolves with the first line it answers ('' if it closes first). */
function askSocket(path: string, hello: Record<string, unknown>): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    let got = '';
    sock.setEncoding('utf8');
    sock.on('error', reject);
    sock.on('data', (d: string) => {
      got += d;
      if (got.includes('\n')) {
        sock.destroy();
        resolve(got.split('\n')[0] as string);
      }
    });
    sock.on('close', () => resolve(got));
    sock.write(`${JSON.stringify(hello)}\n`);
  });
}

/** The whole MCP config the CLI was handed, as text. */
function configText(which: keyof typeof CLIS, r: any): string {
  return which === 'claude' ? r.config : JSON.stringify(r.overrides);
}

for (const which of ['claude', 'codex'] as const) {
  t.test(`${which}: a shared-server call waits for the exact approval, then reaches the server and its answer returns`, async (t) => {
    const s = await setup(which);
    const decide: Decide = (kind) => (kind === 'mcp_call' ? 'wait' : 'approved');
    const { ctx, approvals, events, when, decide: settle } = s.task({ mode: 'build', ceiling: 'workspace', decide });
    const running = s.runner({ text: 'hi there' }).run(ctx);
    await when(() => approvals.some((a) => a.kind === 'mcp_call'));
    t.same(approvals.map((a) => [a.kind, a.action]), [['mcp_call', { server: s.id, tool: 'echo', arguments: { text: 'hi there' } }]], 'one approval, the same a native task asks: server, tool, complete arguments');
    t.notOk(s.received().some((m) => m.startsWith('tools/call')), 'nothing reaches the server while the approval waits');
    if (which === 'claude') {
      // The relay socket answers only this run's token, and only for a shared server.
      const entry = JSON.parse(s.recorded().config).mcpServers.tools;
      t.same(await askSocket(entry.env.SHADOWCODE_RELAY_SOCKET, { token: 'f'.repeat(64), server: 'tools' }), '', 'a wrong token is closed without a word');
      t.match(JSON.parse(await askSocket(entry.env.SHADOWCODE_RELAY_SOCKET, { token: entry.env.SHADOWCODE_RELAY_TOKEN, server: 'other' })), { ok: false, error: /no server named "other"/ });
    }
    settle(approvals[0]!.id, 'approved');
    const out = await running;
    t.equal(out.state, 'succeeded', JSON.stringify(out));
    t.same(s.received().filter((m) => m.startsWith('tools/call')), ['tools/call echo'], 'the real server received exactly the approved call');
    const r = s.recorded();
    t.same(r.mcp.tools, ['echo', 'env'], 'the CLI sees the pinned tools under their own names');
    t.match(r.mcp.result, { isError: false, content: [{ type: 'text', text: /echo: hi there/ }] }, "the server's answer returned to the CLI");
    t.ok(events.some((e) => e.kind === 'mcp.connected'), 'the call went through our client');
    t.match(events.find((e) => e.kind === 'runner.started')!.body, { sandbox: 'bwrap', label: 'sandboxed' }, 'the CLI ran in the sandbox, and the relay reached us from inside it');

    const config = configText(which, r);
    t.notMatch(config, CANARY, 'no secret value in the CLI config');
    t.notMatch(config, /mcp-peer|PEER_LOG|peer\.log|API_TOKEN/, "no granted server's command or environment in the CLI config");
    t.match(config, /dist\/mcp-relay\.js/, 'the CLI config names our relay');
    t.notMatch(JSON.stringify(r.env), CANARY, 'no secret in the CLI environment');
  });
}

// The denial is the relay's answer, the same whichever CLI asked (both reach the relay through
// the same SDK client, fake-mcp-call.mjs, as the tests above show): asked once, through Claude Code.
t.test('claude: a denied call sends nothing to the server and the CLI gets an error', async (t) => {
  const s = await setup('claude');
  const decide: Decide = (kind) => (kind === 'mcp_call' ? 'denied' : 'approved');
  const { ctx, approvals } = s.task({ mode: 'build', ceiling: 'workspace', decide });
  const out = await s.runner({ text: 'leak' }).run(ctx);
  t.equal(out.state, 'succeeded', JSON.stringify(out));
  t.same(approvals.map((a) => a.kind), ['mcp_call']);
  t.notOk(s.received().some((m) => m.startsWith('tools/call')), 'the server received no call');
  t.match(s.recorded().mcp.result, { isError: true, content: [{ type: 'text', text: /SC_APPROVAL_DENIED.*nothing was sent/ }] });
});

t.test('arguments that break the pinned schema are refused before any approval, and nothing is sent', async (t) => {
  const s = await setup('codex');
  const { ctx, approvals } = s.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await s.runner({ text: 42 }).run(ctx)).state, 'succeeded');
  t.same(approvals, [], 'no approval is asked for a call that cannot be made');
  t.notOk(s.received().some((m) => m.startsWith('tools/call')));
  t.match(s.recorded().mcp.result, { isError: true, content: [{ type: 'text', text: /SC_TOOL_ARGS_INVALID/ }] });
});

t.test('cancelling a task while a relayed call waits sends nothing and leaves no relay process', async (t) => {
  const s = await setup('claude');
  const { ctx, approvals, controller, when } = s.task({ mode: 'build', ceiling: 'workspace', decide: () => 'wait' });
  const running = s.runner({ text: 'never' }).run(ctx);
  await when(() => approvals.some((a) => a.kind === 'mcp_call'));
  t.type(s.recorded().mcp.pid, 'number', 'the CLI started our relay');
  const pids = pidsOf(`${s.record}.pids`);
  t.equal(pids.filter(alive).length, 2, 'the CLI and the relay, found by their host pids');
  controller.abort();
  t.equal((await running).state, 'cancelled');
  t.equal(s.db.prepare('SELECT state FROM approvals WHERE id = ?').pluck().get(approvals[0]!.id), 'cancelled');
  t.notOk(s.received().some((m) => m.startsWith('tools/call')), 'the server received no call');
  t.same(await gone(pids), [], 'neither the CLI nor the relay is left');
  t.same(processesWith(s.record), [], "no process mentions this run's record");
});

t.test('codex: an HTTP server (server-everything) is reached through the relay too, after the approval, and the CLI never learns its URL', async (t) => {
  const h = await runnerProject(t);
  const url = (await everythingHttp(t)).url;
  const file = join(h.sb.root, 'everything.yaml');
  writeFileSync(file, `name: everything\nurl: ${url}\ntimeout_sec: 30\n`);
  const add = JSON.parse((await cli(h.sb, ['--json', 'mcp', 'add', file])).stdout);
  t.equal((await cli(h.sb, ['--project', h.sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  mkdirSync(join(h.sb.root, '.codex'));
  const record = join(h.sb.root, '.codex', 'codex-record.json');
  const runner = createRunner(
    { id: 'cx', provider: 'codex', model: 'default', command: CLIS.codex.command, args: ['--fake-scenario', 'mcp', '--fake-record', record, '--fake-mcp', 'everything/echo', '--fake-mcp-args', JSON.stringify({ message: 'through the relay' })] },
    { env: h.sb.env, secrets: h.c.engine.secrets(), policy, db: h.db, gateEnv: { policy, db: () => h.db } },
  );
  const { ctx, approvals } = h.task({ mode: 'build', ceiling: 'workspace' });
  t.equal((await runner.run(ctx)).state, 'succeeded');
  t.same(approvals.map((a) => [a.kind, a.action]), [['mcp_call', { server: add.id, tool: 'echo', arguments: { message: 'through the relay' } }]]);
  const r = JSON.parse(readFileSync(record, 'utf8'));
  t.match(r.mcp.result, { isError: false, content: [{ type: 'text', text: /through the relay/ }] }, "server-everything's answer returned to the CLI");
  t.notMatch(JSON.stringify(r.overrides), new URL(url).host, 'the CLI config holds no URL of the server');
});

t.test('shadowcode run on codex (the built CLI and engine): the relayed call waits for `approvals approve`, then reaches the server', async (t) => {
  const sb = sandbox('relay-e2e');
  await cli(sb, ['--project', sb.project, 'trust']);
  const peerLog = join(sb.project, 'peer.log'); // inside the project: the one place the sandboxed server may write
  mkdirSync(join(sb.root, '.codex'));
  const record = join(sb.root, '.codex', 'codex-record.json');
  const file = join(sb.root, 'tools.yaml');
  writeFileSync(file, `name: tools\ncommand: [${JSON.stringify(process.execPath)}, ${JSON.stringify(PEER)}, "ok"]\nenv:\n  PEER_LOG: ${JSON.stringify(peerLog)}\n`);
  const add = JSON.parse((await cli(sb, ['--json', 'mcp', 'add', file])).stdout);
  t.equal((await cli(sb, ['--project', sb.project, 'mcp', 'enable', add.id, '--hash', add.hash])).code, 0);
  const fixed = ['--fake-scenario', 'mcp', '--fake-record', record, '--fake-mcp', 'tools/echo', '--fake-mcp-args', '{"text":"from the engine"}'];
  const m = await cli(sb, ['model', 'add', 'cx', '--provider', 'codex', '--command', CLIS.codex.command, ...fixed.flatMap((a) => ['--arg', a])]);
  t.equal(m.code, 0, m.stderr);
  const child = spawn(process.execPath, [BIN, '--project', sb.project, '--json', 'run', '--level', 'workspace', 'call the echo tool'], { cwd: sb.root, env: sb.env, stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await until(() => out.includes('"approval_requested"'), 180000);
  const events = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const req = events().find((e) => e.kind === 'approval_requested');
  t.match(req.body, { kind: 'mcp_call', action: { server: add.id, tool: 'echo', arguments: { text: 'from the engine' } } });
  const lines = () => (existsSync(peerLog) ? readFileSync(peerLog, 'utf8') : '');
  t.notMatch(lines(), /tools\/call/, 'nothing reached the server before the approval');
  const ok = await cli(sb, ['--project', sb.project, 'approvals', 'approve', req.body.approval_id]);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await exit, 0, err);
  t.match(lines(), /tools\/call echo/);
  t.match(JSON.parse(readFileSync(record, 'utf8')).mcp.result, { isError: false, content: [{ type: 'text', text: /echo: from the engine/ }] });
  t.match(events().at(-1), { kind: 'state', body: { state: 'succeeded' } });
});
