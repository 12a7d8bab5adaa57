// Finding our tools by keyword, as Claude Code's ToolSearch does (fixtures/tool-search.ts says
// what is mirrored), over the tools/list a real `mcp serve` answers to the official SDK client.
import t from 'tap';
import { sandbox } from '../fixtures/env.js';
import { connect, type Peer } from '../fixtures/mcp.js';
import { SERVER_QUERY, TOOL_REQUESTS } from '../fixtures/tool-requests.js';
import { DEFAULT_MAX_RESULTS, toolSearch } from '../fixtures/tool-search.js';

// The name `mcp register` gives the server by default, and so the prefix of every tool name.
const SERVER = 'shadowcode';

let c: Peer;
let tools: Awaited<ReturnType<Peer['listTools']>>['tools'];
t.before(async () => {
  c = await connect(sandbox(), 'v2-modern');
  tools = (await c.listTools()).tools;
});
t.teardown(() => c?.close());

t.test('every tool is found among the first five by what people ask for it', async (t) => {
  t.same(Object.keys(TOOL_REQUESTS).sort(), tools.map((x) => x.name).sort(), 'requests for every tool the server lists');
  for (const [tool, requests] of Object.entries(TOOL_REQUESTS)) {
    t.ok(requests.length >= 3, `${tool}: several requests`);
    for (const q of requests) {
      const found = toolSearch(SERVER, tools, q);
      t.ok(found.includes(`mcp__${SERVER}__${tool}`), `"${q}" finds ${tool}`, { found });
    }
  }
});

t.test('the server name finds shadow_status among the first five', async (t) => {
  const found = toolSearch(SERVER, tools, SERVER_QUERY);
  t.equal(found.length, DEFAULT_MAX_RESULTS, 'every tool matches the server name, five are shown');
  t.ok(found.includes(`mcp__${SERVER}__shadow_status`), 'shadow_status is one of them', { found });
});

t.test('the search has no stemming: a tool is found by the words its description says', async (t) => {
  const one = [{ name: 'shadow_test', description: 'Submit a test job that runs without any model.' }];
  t.same(toolSearch(SERVER, one, 'tests'), [], '"tests" does not match "test"');
  t.same(toolSearch(SERVER, one, 'submit job'), [`mcp__${SERVER}__shadow_test`]);
  const hinted = [{ name: 'x', description: 'unrelated', _meta: { 'anthropic/searchHint': 'delegate work' } }];
  t.same(toolSearch(SERVER, hinted, 'delegate'), [`mcp__${SERVER}__x`], 'a search hint counts as words of the tool');
});

t.test("the server's instructions name the tools to load first, each one the server lists", async (t) => {
  const text = (c as unknown as { getInstructions(): string | undefined }).getInstructions() ?? '';
  const named = [...new Set(text.match(/\bshadow_[a-z]+\b/g) ?? [])];
  t.equal(named[0], 'shadow_status', 'shadow_status first');
  t.ok(named.length >= 3, 'and the tools most work starts with', { named });
  for (const n of named) t.ok(tools.some((x) => x.name === n), `${n} is a listed tool`);
});
