// The real Claude Code (the pinned devDependency, its native binary) with our `mcp serve` as
// its MCP server, offline against a fake of the Anthropic Messages API:
//
//   claude -p ─► POST /v1/messages (stream): our tools deferred, ToolSearch offered
//     fake ─► one ToolSearch tool_use per request of fixtures/tool-requests.ts (default max_results)
//   Claude Code searches its deferred tools itself ─► POST /v1/messages with one tool_result each,
//     holding tool_reference blocks; the fake refuses, as the API does, a reference to a tool
//     the request does not carry ─► end_turn
//
// So each request is answered by Claude Code's own ranking, against its own deferred tools too.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import t from 'tap';
import { BIN, CODE_CACHE, sandbox } from '../fixtures/env.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { SERVER_QUERY, TOOL_REQUESTS } from '../fixtures/tool-requests.js';

const SERVER = 'shadowcode';

/** The platform package's binary, as the package's own launcher finds it (its install script is denied in package.json). */
function claudeBinary(): string {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  const musl = process.platform === 'linux' && !report?.header?.glibcVersionRuntime;
  const pkg = `@anthropic-ai/claude-code-${process.platform}-${process.arch}${musl ? '-musl' : ''}`;
  return join(dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)), process.platform === 'win32' ? 'claude.exe' : 'claude');
}

/** A proxy that answers nothing and counts who tried it: any request Claude Code sends past the fake. */
async function trap(): Promise<{ url: string; tries: () => number; close: () => Promise<void> }> {
  let tries = 0;
  const server = createServer((s) => {
    tries++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, tries: () => tries, close: () => new Promise((r) => server.close(() => r())) };
}

interface Block {
  type: string;
  tool_use_id?: string;
  tool_name?: string;
  content?: Block[] | string;
}

const requests = [{ tool: 'shadow_status', q: SERVER_QUERY }, ...Object.entries(TOOL_REQUESTS).flatMap(([tool, qs]) => qs.map((q) => ({ tool, q })))];

t.test('Claude Code finds each tool through ToolSearch by what people ask for it', async (t) => {
  const sb = sandbox('sc-claude');
  const proxy = await trap();
  t.teardown(proxy.close);
  const fake = await startFakeModel({
    format: 'anthropic',
    script: [{ split: 4096, tool_calls: requests.map(({ q }, i) => ({ id: `toolu_${i}`, name: 'ToolSearch', arguments: JSON.stringify({ query: q }) })) }, { text: 'Found them.' }],
    // The real API expands a tool_reference into that tool's definition, which the request must carry.
    validate: (body) => {
      const carried = new Set<string>((body?.tools ?? []).map((x: { name: string }) => x.name));
      for (const m of body?.messages ?? [])
        for (const b of Array.isArray(m.content) ? (m.content as Block[]) : [])
          for (const r of Array.isArray(b.content) ? b.content : []) if (r.type === 'tool_reference' && !carried.has(r.tool_name!)) return `Tool reference '${r.tool_name}' not found in available tools`;
      return undefined;
    },
  });
  t.teardown(fake.close);

  const config = join(sb.root, 'mcp.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { [SERVER]: { type: 'stdio', command: process.execPath, args: [BIN, '--project', sb.project, 'mcp', 'serve'], env: { SHADOWCODE_HOME: sb.profile, XDG_CACHE_HOME: CODE_CACHE } } } }));
  const env = {
    PATH: process.env.PATH,
    HOME: sb.root,
    TMPDIR: sb.env.TMPDIR,
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: 'sk-ant-test-not-a-key',
    // Tool search as a user of Anthropic's own API has it (a custom base URL may turn it off).
    ENABLE_TOOL_SEARCH: 'true',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    HTTPS_PROXY: proxy.url,
    HTTP_PROXY: proxy.url,
    NO_PROXY: '127.0.0.1',
  };
  const child: ChildProcess = spawn(claudeBinary(), ['-p', 'Which shadowcode tools fit these requests?', '--mcp-config', config, '--strict-mcp-config', '--output-format', 'stream-json', '--verbose'], { cwd: sb.project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.equal(code, 0, 'claude -p finished', { stderr: err.slice(-2000), stdout: out.slice(-2000) });
  t.equal(proxy.tries(), 0, 'nothing contacted but the fake');

  t.equal(fake.requests.length, 2, 'one turn to search, one with the results');
  const [first, second] = fake.requests.map((r) => r.body);
  t.equal(first.stream, true, 'the messages are streamed');
  const offered = (first.tools as Array<{ name: string; defer_loading?: boolean }>).map((x) => x.name);
  t.ok(offered.includes('ToolSearch'), 'ToolSearch is offered');
  t.notOk(offered.some((n) => n.startsWith(`mcp__${SERVER}__`)), 'our tools are deferred, not sent whole');
  t.match(JSON.stringify([first.system, first.messages]), 'Load shadow_status first', "the server's instructions reach the model");

  const results = new Map<string, string[]>();
  for (const m of second.messages) for (const b of Array.isArray(m.content) ? (m.content as Block[]) : []) if (b.type === 'tool_result') results.set(b.tool_use_id!, (Array.isArray(b.content) ? b.content : []).filter((r) => r.type === 'tool_reference').map((r) => r.tool_name!));
  requests.forEach(({ tool, q }, i) => {
    const found = results.get(`toolu_${i}`) ?? [];
    t.ok(found.length <= 5 && found.includes(`mcp__${SERVER}__${tool}`), `"${q}" finds ${tool}`, { found });
  });
  const loaded = (second.tools as Array<{ name: string; description: string; defer_loading?: boolean }>).find((x) => x.name === `mcp__${SERVER}__shadow_run`);
  t.match(loaded, { defer_loading: true, description: /^Delegate a coding task to an agent/ }, 'a found tool travels with its definition, still deferred');
});
