// Bad params to prompts/get and resources/read are the caller's error: -32602
// with our message naming the field, never -32603 or a parser dump. Checked
// through the official v1 and v2 clients, over stdio and HTTP.
import t from 'tap';
import { cli, sandbox } from '../fixtures/env.js';
import { httpClient, startGateway } from '../fixtures/http.js';
import { connect, FLAVORS } from '../fixtures/mcp.js';

type Requester = { request(req: { method: string; params?: unknown }, schema?: unknown): Promise<unknown> };

const CASES: Array<[string, { method: string; params?: unknown }, RegExp]> = [
  ['a prompt without its required argument', { method: 'prompts/get', params: { name: 'delegate' } }, /SC_TOOL_ARGS_INVALID: prompts\/get: prompt delegate needs the argument task$/],
  ['a prompt with an empty required argument', { method: 'prompts/get', params: { name: 'delegate', arguments: { task: '' } } }, /needs the argument task/],
  ['a prompt argument that is not a string', { method: 'prompts/get', params: { name: 'delegate', arguments: { task: 5 } } }, /params\.arguments\.task must be a string/],
  ['an argument the prompt does not take', { method: 'prompts/get', params: { name: 'understand', arguments: { path: '/etc' } } }, /prompt understand takes no arguments, not "path"/],
  ['prompts/get without a name', { method: 'prompts/get', params: {} }, /params\.name must be the name of a prompt/],
  ['prompts/get with a numeric name', { method: 'prompts/get', params: { name: 7 } }, /params\.name must be the name of a prompt/],
  ['an unknown prompt', { method: 'prompts/get', params: { name: 'nope' } }, /SC_TOOL_UNKNOWN: no prompt "nope"/],
  ['resources/read without a uri', { method: 'resources/read', params: {} }, /SC_TOOL_ARGS_INVALID: resources\/read: params\.uri must be a resource URI/],
  ['resources/read with a numeric uri', { method: 'resources/read', params: { uri: 5 } }, /params\.uri must be a resource URI/],
  ['an unknown resource', { method: 'resources/read', params: { uri: 'shadow://nope' } }, /SC_TOOL_UNKNOWN: no resource "shadow:\/\/nope"/],
];

async function expectInvalidParams(t: any, c: Requester, label: string) {
  for (const [name, req, why] of CASES) {
    const err = await c.request(req as never, undefined).then(
      () => undefined,
      (e: any) => e,
    );
    t.ok(err, `${label}: ${name} is refused`);
    t.equal(err?.code, -32602, `${label}: ${name} is -32602`);
    t.match(err?.message, why, `${label}: ${name} says why`);
    t.notMatch(err?.message, /invalid_type|"path":|expected string/, `${label}: ${name} is no parser dump`);
  }
}

for (const flavor of FLAVORS) {
  t.test(`${flavor} over stdio: bad prompts/get and resources/read params are -32602 with our message`, async (t) => {
    const sb = sandbox();
    const c = await connect(sb, flavor);
    t.teardown(() => c.close());
    await expectInvalidParams(t, c as unknown as Requester, flavor);
    t.equal(c.stderr(), '', 'nothing on stderr');
  });
}

t.test('over HTTP too, with the v2 (modern and legacy) and v1 clients', async (t) => {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  const gw = await startGateway(sb);
  t.teardown(() => gw.stop());
  for (const flavor of ['v2-modern', 'v2-legacy', 'v1'] as const) {
    const c = await httpClient(gw.url, flavor);
    await expectInvalidParams(t, c as unknown as Requester, `http ${flavor}`);
    await c.close();
  }
});
