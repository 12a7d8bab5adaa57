import t from 'tap';
import { isValid } from '../../src/schema/validate.js';
import { cli, sandbox } from '../fixtures/env.js';

t.test('set, list and remove a secret; the value is never printed', async (t) => {
  const sb = sandbox();
  const set = await cli(sb, ['secret', 'set', 'SHADOW_MCP_HTTP_TOKEN'], 'a-long-secret-value-123\n');
  t.equal(set.code, 0, set.stderr);
  t.equal(set.stdout, 'stored secret SHADOW_MCP_HTTP_TOKEN\n');
  const again = await cli(sb, ['--json', 'secret', 'set', 'SHADOW_MCP_HTTP_TOKEN'], 'another-value-456');
  t.same(JSON.parse(again.stdout), { name: 'SHADOW_MCP_HTTP_TOKEN', created: false });
  const list = await cli(sb, ['--json', 'secret', 'list']);
  const data = JSON.parse(list.stdout);
  t.same(Object.keys(data.secrets[0]).sort(), ['created_at', 'name', 'updated_at']);
  t.notMatch(list.stdout, /secret-value|another-value/);
  const rm = await cli(sb, ['secret', 'remove', 'SHADOW_MCP_HTTP_TOKEN']);
  t.equal(rm.code, 0);
  t.equal((await cli(sb, ['secret', 'list'])).stdout, 'no secrets stored\n');
});

t.test('secret refusals: bad name, empty value, oversized value, missing secret, value on argv', async (t) => {
  const sb = sandbox();
  const bad = await cli(sb, ['--json', 'secret', 'set', '1-bad'], 'x');
  t.equal(bad.code, 2);
  t.ok(isValid('error', JSON.parse(bad.stdout)));
  t.equal(JSON.parse(bad.stdout).error.code, 'SC_SECRET_NAME_INVALID');
  const empty = await cli(sb, ['secret', 'set', 'EMPTY'], '\n');
  t.equal(empty.code, 2, 'an empty value is a bad value');
  t.match(empty.stderr, /empty \[SC_SECRET_VALUE_INVALID\]/);
  const blank = await cli(sb, ['secret', 'set', 'BLANK'], '  \t \n');
  t.equal(blank.code, 2, 'a whitespace-only value is refused');
  t.match(blank.stderr, /only whitespace \[SC_SECRET_VALUE_INVALID\]/);
  t.equal(JSON.parse((await cli(sb, ['--json', 'secret', 'list'])).stdout).secrets?.length ?? 0, 0, 'nothing was stored');
  const big = await cli(sb, ['secret', 'set', 'BIG'], 'x'.repeat(70000));
  t.match(big.stderr, /larger than 65536 bytes \[SC_SECRET_VALUE_INVALID\]/);
  const gone = await cli(sb, ['secret', 'remove', 'NEVER_SET']);
  t.match(gone.stderr, /\[SC_SECRET_NOT_FOUND\]/);
  const argv = await cli(sb, ['secret', 'set', 'NAME', 'the-value-on-argv']);
  t.equal(argv.code, 2, 'a value on the command line is a usage error');
  t.notMatch(argv.stderr, /the-value-on-argv/, 'and is not echoed back');
  t.equal((await cli(sb, ['secret', 'list'])).stdout, 'no secrets stored\n', 'nothing was stored by any refusal');
});

t.test('removing a secret that is not stored names the nearest stored one', async (t) => {
  const sb = sandbox();
  await cli(sb, ['secret', 'set', 'SHADOW_MCP_HTTP_TOKEN'], 'a-long-secret-value-123\n');
  const r = await cli(sb, ['--json', 'secret', 'remove', 'SHADOW_MCP_HTTP_TOKN']);
  t.match(JSON.parse(r.stdout).error, { code: 'SC_SECRET_NOT_FOUND', message: /did you mean SHADOW_MCP_HTTP_TOKEN\?/ });
});
