import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { parse as parseToml } from 'smol-toml';
import t from 'tap';
import { isValid } from '../../src/schema/validate.js';
import { cli, ROOT, type Sandbox, sandbox, spawnCli } from '../fixtures/env.js';
import { v1 } from '../fixtures/sdk-v1.js';

/**
 * A sandbox with a trusted project, shared by the tests that launch what they register: both
 * register the same launch command, so the server one of them starts answers for the other too.
 */
let launchSandbox: Promise<Sandbox> | undefined;
function launchable(): Promise<Sandbox> {
  launchSandbox ??= (async () => {
    const sb = sandbox();
    await cli(sb, ['--project', sb.project, 'trust']);
    return sb;
  })();
  return launchSandbox;
}

t.test('each format, spawned exactly as registered, completes a handshake and tools/list', async (t) => {
  const sb = await launchable();
  for (const client of ['generic', 'codex', 'claude', 'cursor'] as const) {
    const argv = ['--project', sb.project, '--profile', sb.profile, 'mcp', 'register', '--client', client, '--name', `sc-${client}`];
    // The built CLI, as a user runs it, prints the first entry: its own path comes from the bundle. The
    // other formats are the same entry rendered differently, which the CLI in this process prints alike.
    const r = client === 'generic' ? await spawnCli(sb, argv) : await cli(sb, argv);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stderr.split('\n')[1], `# The entry selects the profile in use, ${sb.profile}, with --profile: it is not the default profile.`);
    t.match(r.stderr, /^# Merge this sc-\w+ entry into .*; keep your other servers\.\n# The entry selects[^\n]*\n/);
    const entry = client === 'codex' ? (parseToml(r.stdout) as any).mcp_servers[`sc-${client}`] : JSON.parse(r.stdout).mcpServers[`sc-${client}`];
    t.equal(entry.command, process.execPath, 'the real node executable');
    t.same(entry.args, [join(ROOT, 'bin', 'shadowcode.js'), '--project', sb.project, '--profile', sb.profile, 'mcp', 'serve']);
    if (client === 'claude' || client === 'cursor') t.equal(entry.type, 'stdio');
    if (client === 'codex' || client === 'generic') t.equal(entry.type, undefined);
    // The client gets no SHADOWCODE_HOME: the registered --profile alone must select the profile.
    const env = { PATH: process.env.PATH ?? '', HOME: sb.root };
    const flavor = client === 'codex' ? 'v1' : 'v2';
    const seen = await launched(flavor, entry.command, entry.args, env);
    t.equal(seen.tools, 17, `${client}: tools/list over the ${flavor} client`);
    t.equal(seen.profile, sb.profile);
  }
});

t.test('an entry an earlier version wrote, with --workspace where --project is now, still launches the same server', async (t) => {
  const sb = await launchable();
  const r = await cli(sb, ['--json', '--project', sb.project, '--profile', sb.profile, 'mcp', 'register', '--client', 'claude']);
  const entry = JSON.parse(r.stdout).config.mcpServers.shadowcode;
  const older = entry.args.map((a: string) => (a === '--project' ? '--workspace' : a));
  t.not(JSON.stringify(older), JSON.stringify(entry.args), 'the older entry differs only in the option name');
  const seen = await launched('v2', entry.command, older, { PATH: process.env.PATH ?? '', HOME: sb.root });
  t.match(seen, { tools: 17, profile: sb.profile, trusted: true }, 'the same project, trusted, and the same tools');
});

/**
 * What a client sees when it launches `command args` with `env`: its tools/list count, and the
 * profile and project trust shadow_status names. Entries that launch the same command the same
 * way (generic, claude and cursor differ only around it; the profile test's entries are the same
 * command again: their args are checked equal) are one launch: starting that same process again
 * would prove nothing more.
 */
const launches = new Map<string, Promise<{ tools: number; profile: string; trusted: boolean }>>();
function launched(flavor: 'v1' | 'v2', command: string, args: string[], env: Record<string, string>) {
  const key = JSON.stringify([flavor, command, args, env]);
  let seen = launches.get(key);
  if (!seen) {
    seen = (async () => {
      let c: { listTools(): Promise<{ tools: unknown[] }>; callTool(p: unknown): Promise<any>; close(): Promise<void> };
      if (flavor === 'v1') {
        const { Client: V1Client, StdioClientTransport: V1Transport } = v1();
        const v1Peer = new V1Client({ name: 'as-codex', version: '1' });
        await v1Peer.connect(new V1Transport({ command, args, env }));
        c = v1Peer as never;
      } else {
        const v2 = new Client({ name: 'as-v2-host', version: '1' }, { versionNegotiation: { mode: 'auto' } as never });
        await v2.connect(new StdioClientTransport({ command, args, env }), { timeout: 15000 });
        c = v2 as never;
      }
      const tools = (await c.listTools()).tools.length;
      const s = (await c.callTool({ name: 'shadow_status', arguments: {} })).structuredContent;
      await c.close();
      return { tools, profile: s.engine.profile as string, trusted: s.project.trusted as boolean };
    })();
    launches.set(key, seen);
  }
  return seen;
}

t.test('a profile chosen by SHADOWCODE_HOME travels in the entry as --profile DIR, and the launched server uses it', async (t) => {
  const sb = await launchable();
  t.ok(sb.env.SHADOWCODE_HOME, 'the profile comes from SHADOWCODE_HOME only');
  for (const client of ['codex', 'claude'] as const) {
    const r = await cli(sb, ['--project', sb.project, 'mcp', 'register', '--client', client]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, `# The entry selects the profile in use, ${sb.profile}, with --profile: it is not the default profile.`);
    const entry = client === 'codex' ? (parseToml(r.stdout) as any).mcp_servers.shadowcode : JSON.parse(r.stdout).mcpServers.shadowcode;
    t.same(entry.args, [join(ROOT, 'bin', 'shadowcode.js'), '--project', sb.project, '--profile', sb.profile, 'mcp', 'serve']);
    // Spawned exactly as printed, by a client whose environment has no SHADOWCODE_HOME.
    const env = { PATH: process.env.PATH ?? '', HOME: sb.root };
    const s = await launched(client === 'codex' ? 'v1' : 'v2', entry.command, entry.args, env);
    t.equal(s.profile, sb.profile, `${client}: the registered profile is the one in use`);
    t.equal(s.trusted, true, `${client}: so the project trusted there shows trusted`);
  }
  const json = JSON.parse((await cli(sb, ['--json', '--project', sb.project, 'mcp', 'register'])).stdout);
  t.equal(json.profile, sb.profile, '--json names it too');
});

t.test('the default profile is not named in the entry', async (t) => {
  const sb = sandbox();
  const data = join(sb.root, 'data');
  const env = { PATH: sb.env.PATH, HOME: sb.root, TMPDIR: sb.env.TMPDIR, XDG_DATA_HOME: data };
  for (const argv of [[], ['--profile', join(data, 'shadowcode')]]) {
    const r = await cli({ ...sb, env }, ['--json', ...argv, '--project', sb.project, 'mcp', 'register']);
    t.equal(r.code, 0, r.stderr);
    const reg = JSON.parse(r.stdout);
    t.same(reg.args.slice(1), ['--project', sb.project, 'mcp', 'serve'], argv.join(' ') || 'no flag');
    t.equal(reg.profile, undefined);
    t.notMatch(r.stderr, /--profile/);
  }
});

t.test('--json prints the registration as schema-valid data; codex refuses --json', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['--json', '--project', sb.project, 'mcp', 'register', '--client', 'claude', '--allow-write', '--allow-approvals']);
  t.equal(r.code, 0, r.stderr);
  const reg = JSON.parse(r.stdout);
  t.ok(isValid('registration', reg));
  t.same(reg.args.slice(-4), ['mcp', 'serve', '--allow-write', '--allow-approvals']);
  const codex = await cli(sb, ['--json', '--project', sb.project, 'mcp', 'register', '--client', 'codex']);
  t.equal(codex.code, 2);
  t.equal(JSON.parse(codex.stdout).error.code, 'SC_REGISTER_UNSUPPORTED');
});

t.test('registration refusals', async (t) => {
  const sb = sandbox();
  const ws = ['--project', sb.project];
  const cases: Array<[string[], string, RegExp?]> = [
    [[...ws, 'mcp', 'register', '--allow-approvals'], 'SC_USAGE', /--allow-approvals needs --allow-write/],
    [['mcp', 'register'], 'SC_WORKSPACE_REQUIRED'],
    [[...ws, 'mcp', 'register', '--name', 'bad name'], 'SC_BAD_VALUE'],
    [[...ws, 'mcp', 'register', '--client', 'vim'], 'SC_BAD_VALUE'],
    [['mcp', 'register', '--url', 'http://127.0.0.1:8765/mcp', '--token-env', 'SHADOW_MCP_HTTP_TOKEN'], 'SC_REGISTER_UNSUPPORTED', /credential-variable syntax/],
    [['mcp', 'register', '--client', 'cursor', '--url', 'http://127.0.0.1:8765/mcp'], 'SC_USAGE', /both --url and --token-env/],
    [['mcp', 'register', '--client', 'cursor', '--url', 'http://127.0.0.1:8765/mcp', '--token-env', 'T', '--allow-write'], 'SC_REGISTER_UNSUPPORTED', /startup flags/],
    [['mcp', 'register', '--client', 'claude', '--url', 'http://10.0.0.1:8765/mcp', '--token-env', 'T'], 'SC_REGISTER_URL_INVALID'],
    [['mcp', 'register', '--client', 'claude', '--url', 'http://127.0.0.1:8765/mcp', '--token-env', 'ANTHROPIC_API_KEY'], 'SC_REGISTER_TOKEN_ENV_INVALID', /SHADOW_MCP_HTTP_TOKEN/],
  ];
  for (const [argv, code, msg] of cases) {
    const r = await cli(sb, ['--json', ...argv]);
    t.not(r.code, 0, argv.join(' '));
    const err = JSON.parse(r.stdout).error;
    t.equal(err.code, code, argv.join(' '));
    if (msg) t.match(err.message, msg);
  }
});

t.test('a CLI running from a temporary location is not registered', async (t) => {
  const sb = sandbox();
  // As if the whole checkout were in the temp directory (an unpacked npx run).
  const r = await cli({ ...sb, env: { ...sb.env, TMPDIR: dirname(ROOT) } }, ['--project', sb.project, 'mcp', 'register']);
  t.equal(r.code, 1);
  t.match(r.stderr, /is in a temporary location .* Install shadowcode persistently \(from a checkout: npm ci && npm run build && npm link; or npm pack there and npm install -g \.\/shadowcode-\d+\.\d+\.\d+\.tgz\)/);
  t.equal(r.stdout, '', 'nothing to paste');
});

t.test('a workspace path with ${ is refused for clients that expand it, and kept literal for codex', async (t) => {
  const sb = sandbox();
  const odd = join(sb.root, 'a ${HOME} "q" \\ é');
  (await import('node:fs')).mkdirSync(odd);
  const claude = await cli(sb, ['--project', odd, 'mcp', 'register', '--client', 'claude']);
  t.match(claude.stderr, /claude would expand the "\$\{".*\[SC_REGISTER_EXPANSION\]/);
  const codex = await cli(sb, ['--project', odd, 'mcp', 'register', '--client', 'codex']);
  t.equal(codex.code, 0);
  t.equal((parseToml(codex.stdout) as any).mcp_servers.shadowcode.args[2], odd);
});

t.test('HTTP registration prints only the variable name, never its value', async (t) => {
  const sb = sandbox();
  const value = 'tok-canary-0123456789abcdef0123456789abcdef';
  for (const client of ['codex', 'claude', 'cursor']) {
    const r = await cli({ ...sb, env: { ...sb.env, SHADOW_MCP_HTTP_TOKEN: value } }, ['mcp', 'register', '--client', client, '--url', 'http://localhost:8765/mcp', '--token-env', 'SHADOW_MCP_HTTP_TOKEN']);
    t.equal(r.code, 0, r.stderr);
    t.notMatch(r.stdout + r.stderr, /tok-canary/);
    t.match(r.stdout, /SHADOW_MCP_HTTP_TOKEN/);
  }
});

/** A stand-in for the client's CLI on PATH: prints the argv the shell gave it, as JSON. */
function fakeHost(dir: string, name: string): void {
  writeFileSync(join(dir, name), `#!${process.execPath}\nprocess.stdout.write(JSON.stringify(process.argv.slice(2)));\n`, { mode: 0o755 });
}

t.test("the client's own add command, run by a real shell, passes the entry exactly, odd paths included", async (t) => {
  const sb = sandbox();
  const bin = join(sb.root, 'hostbin');
  mkdirSync(bin);
  fakeHost(bin, 'claude');
  fakeHost(bin, 'codex');
  const odd = join(sb.root, "it's a ${HOME} \"q\" \\ é");
  mkdirSync(odd);
  for (const [client, workspace] of [['claude', sb.project], ['codex', odd]] as const) {
    const r = await cli(sb, ['--project', workspace, 'mcp', 'register', '--client', client]);
    t.equal(r.code, 0, r.stderr);
    const lines = r.stderr.split('\n');
    const line = lines[lines.findIndex((l) => l.startsWith('# Or let the client add it')) + 1]!;
    t.match(line, client === 'claude' ? /^claude mcp add-json shadowcode '/ : /^codex mcp add shadowcode -- /);
    const argv = JSON.parse(execFileSync('sh', ['-c', line], { env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' })) as string[];
    if (client === 'claude') {
      t.same(argv.slice(0, 3), ['mcp', 'add-json', 'shadowcode']);
      t.same(JSON.parse(argv[3]!), JSON.parse(r.stdout).mcpServers.shadowcode, 'claude gets the entry inside mcpServers, as printed');
    } else {
      const entry = (parseToml(r.stdout) as any).mcp_servers.shadowcode;
      t.same(argv, ['mcp', 'add', 'shadowcode', '--', entry.command, ...entry.args], 'codex gets the command and args of the entry, the odd path intact');
      t.equal(argv[7], odd);
    }
  }
  // An HTTP entry keeps its ${VAR} for claude to expand: the shell must not.
  const http = await cli(sb, ['mcp', 'register', '--client', 'claude', '--url', 'http://127.0.0.1:8765/mcp', '--token-env', 'SHADOW_MCP_HTTP_TOKEN']);
  const line = http.stderr.split('\n').find((l) => l.startsWith('claude mcp add-json'))!;
  const argv = JSON.parse(execFileSync('sh', ['-c', line], { env: { PATH: `${bin}:${process.env.PATH}`, SHADOW_MCP_HTTP_TOKEN: 'tok-canary' }, encoding: 'utf8' })) as string[];
  t.same(JSON.parse(argv[3]!).headers, { Authorization: 'Bearer ${SHADOW_MCP_HTTP_TOKEN}' });
});

t.test('says where a user-wide configuration would bind every session to this project, and which clients have no add command', async (t) => {
  const sb = sandbox();
  const ws = ['--project', sb.project, 'mcp', 'register'];
  const codex = await cli(sb, [...ws, '--client', 'codex']);
  t.match(codex.stderr, /^# In ~\/\.codex\/config\.toml it would bind every session, in any folder, to this one project\.$/m);
  t.match(codex.stderr, /^# Or let the client add it; this writes ~\/\.codex\/config\.toml, with that effect:$/m, 'codex mcp add writes the user-wide file: said so');
  const claude = await cli(sb, [...ws, '--client', 'claude']);
  t.match(claude.stderr, /^# In the user scope of ~\/\.claude\.json \(--scope user\) it would bind every session/m);
  t.match(claude.stderr, /this writes ~\/\.claude\.json, for this project only \(local scope\)/);
  const cursor = await cli(sb, [...ws, '--client', 'cursor']);
  t.match(cursor.stderr, /^# In ~\/\.cursor\/mcp\.json it would bind every session/m);
  t.notMatch(cursor.stderr, /Or let the client add it/, 'cursor has no add command');
  const generic = await cli(sb, ws);
  t.notMatch(generic.stderr, /bind every session|Or let the client/, 'a generic host has no known user scope or command');
  const codexHttp = await cli(sb, ['mcp', 'register', '--client', 'codex', '--url', 'http://127.0.0.1:8765/mcp', '--token-env', 'SHADOW_MCP_HTTP_TOKEN']);
  t.notMatch(codexHttp.stderr, /Or let the client add it/, 'no codex command for an HTTP entry');

  const json = JSON.parse((await cli(sb, ['--json', ...ws, '--client', 'claude'])).stdout);
  t.ok(isValid('registration', json));
  t.same(json.host_command.argv.slice(0, 4), ['claude', 'mcp', 'add-json', 'shadowcode']);
  t.equal(json.user_scope, 'the user scope of ~/.claude.json (--scope user)');
});
