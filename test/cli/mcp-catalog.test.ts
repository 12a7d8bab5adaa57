// Definitions, grants, project files and plugins through the CLI, with real files.
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { isValid } from '../../src/schema/validate.js';
import { cli, connection, type Sandbox, sandbox, spawnCli } from '../fixtures/env.js';
import { fields } from '../fixtures/exact.js';

const DEF = (name = 'my-tools', arg = '--stdio') => `name: ${name}\ncommand: ["/opt/tools/bin/server", "${arg}"]\ndescription: Tools\nenv_refs:\n  API_TOKEN: MY_TOOLS_API_KEY\n`;

async function json(sb: Sandbox, argv: string[], stdin = '') {
  const r = await cli(sb, ['--json', ...argv], stdin);
  return { code: r.code, data: JSON.parse(r.stdout || 'null'), stderr: r.stderr };
}
function file(sb: Sandbox, name: string, text: string): string {
  const p = join(sb.root, name);
  writeFileSync(p, text);
  return p;
}
async function trusted(): Promise<Sandbox> {
  const sb = sandbox();
  await cli(sb, ['--project', sb.project, 'trust']);
  return sb;
}
const ws = (sb: Sandbox) => ['--project', sb.project];

t.test('add, enable by hash, view, disable', async (t) => {
  const sb = await trusted();
  const add = await json(sb, ['mcp', 'add', file(sb, 'd.yaml', DEF())]);
  t.equal(add.code, 0, add.stderr);
  t.match(add.data, { id: 'config:my-tools', replaced: false, hash: /^[0-9a-f]{64}$/ });
  const en = await json(sb, [...ws(sb), 'mcp', 'enable', 'config:my-tools', '--hash', add.data.hash]);
  t.match(en.data.grant, { project: sb.project, definition_id: 'config:my-tools', hash: add.data.hash });
  const view = await json(sb, [...ws(sb), 'mcp']);
  t.ok(isValid('catalog-view', view.data), 'the view matches its schema');
  t.match(view.data, { enabled: 1, cap: 4, audit: { ok: true }, definitions: [{ id: 'config:my-tools', source: 'config', transport: 'stdio', executable: '/opt/tools/bin/server', argument_count: 1, grant: { state: 'enabled' } }] });
  t.equal(view.data.definitions.length, 1, 'one definition');
  t.same([view.data.definitions[0].env_names, view.data.definitions[0].credential_names], [['API_TOKEN'], ['MY_TOOLS_API_KEY']], 'exactly the names it uses');
  t.same(view.data.history.map((h: any) => h.action), ['mcp.add', 'mcp.enable']);
  await json(sb, [...ws(sb), 'mcp', 'disable', 'config:my-tools']);
  t.equal((await json(sb, [...ws(sb), 'mcp'])).data.definitions[0].grant.state, 'disabled');
  const again = await json(sb, [...ws(sb), 'mcp', 'disable', 'config:my-tools']);
  t.equal(again.code, 0, 'disabling a disabled grant is a no-op');
  t.same(again.data, { id: 'config:my-tools', disabled: true, changed: false });
  const said = await cli(sb, [...ws(sb), 'mcp', 'disable', 'config:my-tools']);
  t.equal(said.stdout, `config:my-tools is not enabled for ${sb.project}; nothing changed\n`);
  const typo = await json(sb, [...ws(sb), 'mcp', 'disable', 'config:my-tols']);
  t.match(typo.data.error, { code: 'SC_DEF_NOT_FOUND', message: /no definition config:my-tols; did you mean config:my-tools\?/ });
});

t.test('the audit view counts only applied grant changes, and lists refusals with the hash they were about', async (t) => {
  const sb = await trusted();
  const add = await json(sb, ['mcp', 'add', file(sb, 'd.yaml', DEF())]);
  const wrong = 'f'.repeat(64);
  for (let i = 0; i < 3; i++) t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:my-tools', '--hash', wrong])).data.error.code, 'SC_HASH_MISMATCH');
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:my-tools', '--hash', add.data.hash])).code, 0);
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:nope', '--hash', add.data.hash])).data.error.code, 'SC_DEF_NOT_FOUND');
  await json(sb, ['mcp', 'add', file(sb, 'same.yaml', DEF())]);
  const view = (await json(sb, [...ws(sb), 'mcp'])).data;
  t.ok(isValid('catalog-view', view));
  t.equal(view.changes, 2, 'one add and one enable changed anything');
  t.equal(view.refusals, 4);
  t.match(view.history[0], { action: 'mcp.add', result: 'applied', id: 'config:my-tools', hash: add.data.hash });
  t.match(view.history.slice(1, 4), Array(3).fill({ action: 'mcp.enable', result: 'refused', code: 'SC_HASH_MISMATCH', hash: wrong }));
  t.match(view.history[4], { action: 'mcp.enable', result: 'applied', hash: add.data.hash });
  t.match(view.history[5], { action: 'mcp.enable', id: 'config:nope', allowed: true, result: 'refused', code: 'SC_DEF_NOT_FOUND' });
  t.match(view.history[6], { action: 'mcp.add', result: 'unchanged', hash: add.data.hash });
  const text = (await cli(sb, [...ws(sb), 'mcp'])).stdout;
  t.match(text, /; 2 changes to definitions and grants, 4 refused\n/);
  t.match(text, new RegExp(`mcp\\.enable +config:my-tools +SC_HASH_MISMATCH +${wrong}`), 'a refusal shows its hash');
  const other = join(sb.root, 'untrusted');
  mkdirSync(other);
  await json(sb, ['--project', other, 'mcp', 'disable', 'config:my-tools']);
  t.match((await json(sb, ['--project', other, 'mcp'])).data, { changes: 1, refusals: 0 }, 'a no-op disable elsewhere is no change');
});

t.test('adding identical content again is a no-op that says so, with or without --hash', async (t) => {
  const sb = sandbox();
  const path = file(sb, 'd.yaml', DEF());
  const first = await json(sb, ['mcp', 'add', path]);
  const again = await json(sb, ['mcp', 'add', path]);
  t.equal(again.code, 0);
  t.match(again.data, { id: 'config:my-tools', hash: first.data.hash, replaced: false, unchanged: true });
  const text = await cli(sb, ['mcp', 'add', path]);
  t.match(text.stdout, /^config:my-tools is already stored with this content; nothing changed\nhash [0-9a-f]{64}\n$/);
  const json2 = file(sb, 'd.json', JSON.stringify({ name: 'my-tools', command: ['/opt/tools/bin/server', '--stdio'], description: 'Tools', env_refs: { API_TOKEN: 'MY_TOOLS_API_KEY' } }));
  t.match((await json(sb, ['mcp', 'add', json2, '--hash', first.data.hash])).data, { unchanged: true }, 'the same content as JSON is the same');
  t.equal((await json(sb, ['mcp', 'add', file(sb, 'e.yaml', DEF('my-tools', '--other'))])).data.error.code, 'SC_DEF_EXISTS', 'different content still needs --hash');
});

t.test('mcp add warns that ${ in a command is not expanded, and points at typos in keys', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['mcp', 'add', file(sb, 'w.yaml', 'name: w\ncommand: ["/opt/w", "--key=${API_KEY}"]\n')]);
  t.equal(r.code, 0);
  t.match(r.stderr, /^shadowcode: warning: command\[1\] contains "\$\{", which is passed literally/);
  const j = await json(sb, ['mcp', 'add', file(sb, 'w2.yaml', 'name: w2\ncommand: ["/opt/w", "${HOME}"]\n')]);
  t.matchOnly(j.data.warnings, [/command\[1\]/]);
  t.equal(j.stderr, '', 'with --json the warning is in the data only');
  const typo = await cli(sb, ['mcp', 'add', file(sb, 'typo.yaml', 'name: t\ncomand: ["/opt/t"]\n')]);
  t.equal(typo.code, 1);
  t.match(typo.stderr, /unknown key "comand"; did you mean "command"\? \[SC_DEF_INVALID\]/);
  const comma = await cli(sb, ['mcp', 'add', file(sb, 'comma.json', '{"name":"c","command":["/opt/c"],}')]);
  t.match(comma.stderr, /comma\.json: invalid JSON at line 1, column 34: a trailing comma is not allowed/);
});

t.test('enable refusals: missing or wrong hash, untrusted project, a fifth server', async (t) => {
  const sb = await trusted();
  const hashes: string[] = [];
  for (let i = 0; i < 5; i++) hashes.push((await json(sb, ['mcp', 'add', file(sb, `d${i}.yaml`, DEF(`s${i}`))])).data.hash);
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:s0'])).data.error.code, 'SC_USAGE');
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:s0', '--hash', hashes[1]!])).data.error.code, 'SC_HASH_MISMATCH');
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:nope', '--hash', hashes[0]!])).data.error.code, 'SC_DEF_NOT_FOUND');
  for (let i = 0; i < 4; i++) t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', `config:s${i}`, '--hash', hashes[i]!])).code, 0);
  const fifth = await json(sb, [...ws(sb), 'mcp', 'enable', 'config:s4', '--hash', hashes[4]!]);
  t.match(fifth.data.error, { code: 'SC_GRANT_LIMIT', message: /already has 4 enabled servers/ });
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'config:s0', '--hash', hashes[0]!])).code, 0, 're-enabling an enabled one takes no new slot');
  const other = join(sb.root, 'untrusted');
  mkdirSync(other);
  t.equal((await json(sb, ['--project', other, 'mcp', 'enable', 'config:s4', '--hash', hashes[4]!])).data.error.code, 'SC_PROJECT_UNTRUSTED');
});

t.test('replacing a definition needs its current hash, and makes its grants stale', async (t) => {
  const sb = await trusted();
  const a = (await json(sb, ['mcp', 'add', file(sb, 'a.yaml', DEF())])).data;
  await json(sb, [...ws(sb), 'mcp', 'enable', a.id, '--hash', a.hash]);
  const p = file(sb, 'b.json', JSON.stringify({ name: 'my-tools', command: ['/opt/tools/bin/server', '--changed'] }));
  t.match((await json(sb, ['mcp', 'add', p])).data.error, { code: 'SC_DEF_EXISTS', message: /pass --hash/ });
  t.equal((await json(sb, ['mcp', 'add', p, '--hash', '0'.repeat(64)])).data.error.code, 'SC_HASH_MISMATCH');
  const b = (await json(sb, ['mcp', 'add', p, '--hash', a.hash])).data;
  t.equal(b.replaced, true);
  const d = (await json(sb, [...ws(sb), 'mcp'])).data.definitions[0];
  t.match(d.grant, { state: 'stale', granted_hash: a.hash, reason: /enable the new hash or disable/ });
  t.equal((await json(sb, [...ws(sb), 'mcp'])).data.enabled, 0, 'a stale grant is never counted as enabled');
  await json(sb, [...ws(sb), 'mcp', 'enable', a.id, '--hash', b.hash]);
  t.equal((await json(sb, [...ws(sb), 'mcp'])).data.definitions[0].grant.state, 'enabled');
});

t.test('removing a definition removes every grant; identical content added again is not enabled', async (t) => {
  const sb = await trusted();
  const p2 = join(sb.root, 'p2');
  mkdirSync(p2);
  await cli(sb, ['--project', p2, 'trust']);
  const a = (await json(sb, ['mcp', 'add', file(sb, 'a.yaml', DEF())])).data;
  await json(sb, [...ws(sb), 'mcp', 'enable', a.id, '--hash', a.hash]);
  await json(sb, ['--project', p2, 'mcp', 'enable', a.id, '--hash', a.hash]);
  t.equal((await json(sb, ['mcp', 'remove', a.id])).data.error.code, 'SC_USAGE');
  const r = (await json(sb, ['mcp', 'remove', a.id, '--hash', a.hash])).data;
  t.equal(r.grants_removed, 2);
  const again = (await json(sb, ['mcp', 'add', file(sb, 'a2.yaml', DEF())])).data;
  t.equal(again.hash, a.hash, 'same content, same hash');
  for (const p of [sb.project, p2]) t.equal((await json(sb, ['--project', p, 'mcp'])).data.definitions[0].grant.state, 'disabled');
});

t.test('two CLI processes adding definitions at once lose nothing', async (t) => {
  const sb = await trusted();
  await cli(sb, ['status']);
  const add = (name: string, text: string) => spawnCli(sb, ['mcp', 'add', file(sb, name, text)]);
  // One race of six processes: four different names, and two adds of one name.
  const [dup1, dup2, ...runs] = await Promise.all([add('x1.yaml', DEF('same', 'one')), add('x2.yaml', DEF('same', 'two')), ...Array.from({ length: 4 }, (_, i) => add(`c${i}.yaml`, DEF(`c${i}`)))]);
  t.same(runs.map((r) => r.code), [0, 0, 0, 0], runs.map((r) => r.stderr).join(''));
  t.same([dup1!.code, dup2!.code].sort(), [0, 1], 'of two racing adds of one name, exactly one wins and the other is told');
  const ids = (await json(sb, ['mcp'])).data.definitions.map((d: any) => d.id);
  t.same(ids, ['config:c0', 'config:c1', 'config:c2', 'config:c3', 'config:same']);
});

t.test('project files: read and hashed at every use; links and escapes refused; changes make grants stale', async (t) => {
  const sb = await trusted();
  mkdirSync(join(sb.project, '.shadowcode', 'mcp'), { recursive: true });
  mkdirSync(join(sb.project, '.shadow', 'mcp'), { recursive: true });
  mkdirSync(join(sb.project, '.shadowcode', 'mcp', 'nested'));
  writeFileSync(join(sb.project, '.shadowcode', 'mcp', 'nested', 'deep.yaml'), DEF('deep'));
  writeFileSync(join(sb.project, '.shadowcode', 'mcp', 'local.yaml'), DEF('local'));
  writeFileSync(join(sb.project, '.shadow', 'mcp', 'other.json'), JSON.stringify({ name: 'other', url: 'http://127.0.0.1:9/mcp' }));
  writeFileSync(join(sb.project, '.shadowcode', 'mcp', 'broken.yaml'), 'name: [');
  writeFileSync(join(sb.root, 'outside.yaml'), DEF('outside'));
  symlinkSync(join(sb.root, 'outside.yaml'), join(sb.project, '.shadowcode', 'mcp', 'link.yaml'));
  const view = (await json(sb, [...ws(sb), 'mcp'])).data;
  const by = Object.fromEntries(view.definitions.map((d: any) => [d.id, d]));
  t.same(Object.keys(by).sort(), ['project:.shadow/mcp/other.json', 'project:.shadowcode/mcp/broken.yaml', 'project:.shadowcode/mcp/link.yaml', 'project:.shadowcode/mcp/local.yaml'], 'direct files only, no recursion');
  t.match(by['project:.shadowcode/mcp/link.yaml'].grant, { state: 'refused', reason: /SC_DEF_REFUSED: .*symbolic link/ });
  t.match(by['project:.shadowcode/mcp/broken.yaml'].grant, { state: 'refused', reason: /SC_DEF_INVALID/ });
  t.equal((await json(sb, [...ws(sb), 'mcp', 'enable', 'project:.shadowcode/mcp/link.yaml', '--hash', '0'.repeat(64)])).data.error.code, 'SC_DEF_REFUSED');
  const local = by['project:.shadowcode/mcp/local.yaml'];
  t.equal(local.grant.state, 'disabled', 'a project file grants itself nothing');
  await json(sb, [...ws(sb), 'mcp', 'enable', local.id, '--hash', local.hash]);
  writeFileSync(join(sb.project, '.shadowcode', 'mcp', 'local.yaml'), DEF('local', '--edited'));
  t.equal((await json(sb, [...ws(sb), 'mcp'])).data.definitions.find((d: any) => d.id === local.id).grant.state, 'stale', 'an edited file is re-hashed');
  rmSync(join(sb.project, '.shadowcode', 'mcp', 'local.yaml'));
  const gone = (await json(sb, [...ws(sb), 'mcp'])).data;
  t.matchOnly(fields(gone.stale_grants, ['definition_id', 'reason']), [{ definition_id: local.id, reason: /no longer exists/ }], 'a vanished file leaves a stale grant');
  const doc = await connection(sb);
  t.teardown(() => doc.engine.shutdown());
  t.match((await doc.call('shadow_doctor')).data.checks.find((c: any) => c.id === 'grants'), { status: 'warn', detail: /stale: project:\.shadowcode\/mcp\/local\.yaml/ });
});

t.test('plugins: namespaced, inert until enabled, references only, removal revokes grants', async (t) => {
  const sb = await trusted();
  const dir = join(sb.root, 'plug');
  mkdirSync(dir);
  writeFileSync(join(dir, 'shadowcode-plugin.json'), JSON.stringify({ name: 'acme', version: '1.2.0', servers: [{ name: 'lint', command: ['/opt/acme/lint'], env_refs: { ACME_KEY: 'ACME_API_KEY' } }, { name: 'search', url: 'https://search.acme.example/mcp', api_key_env: 'ACME_SEARCH' }] }));
  const inst = (await json(sb, ['plugin', 'install', dir])).data;
  t.same(inst.definitions.map((d: any) => d.id), ['plugin:acme/lint', 'plugin:acme/search']);
  const view = (await json(sb, [...ws(sb), 'mcp'])).data;
  t.ok(view.definitions.every((d: any) => d.grant.state === 'disabled' && d.source === 'plugin'), 'inert until enabled');
  t.equal(view.definitions[1].needs_network, true);
  t.same(view.definitions[1].credential_names, ['ACME_SEARCH']);
  await json(sb, [...ws(sb), 'mcp', 'enable', 'plugin:acme/lint', '--hash', inst.definitions[0].hash]);
  t.equal((await json(sb, ['mcp', 'remove', 'plugin:acme/lint', '--hash', inst.definitions[0].hash])).data.error.code, 'SC_DEF_NOT_FOUND', 'plugin definitions go with their plugin');
  const rm = (await json(sb, ['plugin', 'remove', 'acme'])).data;
  t.same([rm.removed, rm.grants_removed], [['plugin:acme/lint', 'plugin:acme/search'], 1], 'both definitions and the one grant, nothing else');
  t.same((await json(sb, [...ws(sb), 'mcp'])).data.definitions, []);
  t.equal((await json(sb, ['plugin', 'remove', 'acme'])).data.error.code, 'SC_PLUGIN_NOT_FOUND');
  writeFileSync(join(dir, 'shadowcode-plugin.json'), JSON.stringify({ name: 'acme', version: '1', servers: [{ name: 'lint', command: ['/opt/acme/lint'], env: { KEY: 'literal' } }] }));
  t.match((await json(sb, ['plugin', 'install', dir])).data.error, { code: 'SC_PLUGIN_INVALID', message: /by reference only/ });
  t.equal((await json(sb, ['plugin', 'install', sb.project])).data.error.code, 'SC_PLUGIN_INVALID');
});

t.test('canary: stored secret values appear nowhere but the secret store', async (t) => {
  const sb = await trusted();
  const canaries = ['canary-literal-env-7d1f9a', 'canary-secret-store-2b8e4c'];
  await cli(sb, ['secret', 'set', 'MY_TOOLS_API_KEY'], canaries[1]);
  const def = `name: leaky\ncommand: ["/opt/x/bin/server"]\nenv:\n  LITERAL_TOKEN: ${canaries[0]}\nenv_refs:\n  API: MY_TOOLS_API_KEY\n`;
  mkdirSync(join(sb.project, '.shadowcode', 'mcp'), { recursive: true });
  writeFileSync(join(sb.project, '.shadowcode', 'mcp', 'leaky.yaml'), def.replace('leaky', 'leaky-project'));
  const outputs: string[] = [];
  const run = async (argv: string[], stdin = '') => {
    const r = await cli(sb, argv, stdin);
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const add = JSON.parse((await run(['--json', 'mcp', 'add', file(sb, 'leaky.yaml', def)])).stdout);
  await run(['mcp', 'add', file(sb, 'leaky.yaml', def)]);
  await run([...ws(sb), 'mcp', 'enable', add.id, '--hash', add.hash]);
  await run([...ws(sb), 'mcp']);
  await run(['--json', ...ws(sb), 'mcp']);
  await run(['mcp', 'add', file(sb, 'bad.yaml', `${def}surprise: ${canaries[0]}\n`)]);
  await run(['secret', 'list']);
  await run(['--json', 'secret', 'list']);
  const c = await connection(sb);
  for (const tool of ['shadow_status', 'shadow_doctor', 'shadow_models', 'shadow_tools']) outputs.push(JSON.stringify(await c.call(tool)));
  await c.engine.shutdown();
  for (const canary of canaries) {
    t.notOk(outputs.some((o) => o.includes(canary)), `${canary} is in no output or error`);
    for (const f of readdirSync(sb.profile).filter((f) => f !== 'secrets.json')) t.notOk(readFileSync(join(sb.profile, f)).toString('latin1').includes(canary), `${canary} is not in ${f}`);
    t.ok(readFileSync(join(sb.profile, 'secrets.json'), 'utf8').includes(canary), `${canary} is in the secret store`);
  }
});

t.test('an id that names no definition: mcp tools, enable and remove say so, with the nearest id', async (t) => {
  const sb = await trusted();
  const add = await json(sb, ['mcp', 'add', file(sb, 'd.yaml', DEF())]);
  const tools = await json(sb, [...ws(sb), 'mcp', 'tools', 'config:nothere']);
  t.equal(tools.code, 1, 'not a successful empty answer');
  t.match(tools.data.error, { code: 'SC_DEF_NOT_FOUND', message: /^no stored definition config:nothere \(shadowcode mcp lists them\)$/ });
  const near = await json(sb, [...ws(sb), 'mcp', 'tools', 'config:my-tols']);
  t.match(near.data.error, { code: 'SC_DEF_NOT_FOUND', message: /did you mean config:my-tools\?/ });
  const stored = await json(sb, [...ws(sb), 'mcp', 'tools', 'config:my-tools']);
  t.equal(stored.code, 0, 'a stored definition whose catalog was never read is not an error');
  const enable = await json(sb, [...ws(sb), 'mcp', 'enable', 'config:my-tols', '--hash', add.data.hash]);
  t.match(enable.data.error, { code: 'SC_DEF_NOT_FOUND', message: /did you mean config:my-tools\?/ });
  const remove = await json(sb, ['mcp', 'remove', 'config:my-tols', '--hash', add.data.hash]);
  t.match(remove.data.error, { code: 'SC_DEF_NOT_FOUND', message: /did you mean config:my-tools\?/ });
});

t.test('a literal env value is moved into the secret store, said so, and listed by secret list by name only', async (t) => {
  const sb = sandbox();
  const value = 'literal-canary-value-0123456789';
  const def = `name: lit\ncommand: ["/opt/tools/bin/server"]\nenv:\n  LOG_TOKEN: ${value}\n  MODE: fast\n`;
  const add = await cli(sb, ['mcp', 'add', file(sb, 'lit.yaml', def)]);
  t.equal(add.code, 0, add.stderr);
  t.match(add.stdout, /\nthe literal values of LOG_TOKEN, MODE moved into the profile's secret store \(listed by shadowcode secret list\); the stored definition keeps only the names\n$/);
  const again = await cli(sb, ['mcp', 'add', file(sb, 'lit.yaml', def)]);
  t.notMatch(again.stdout, /moved into/, 'adding identical content again moves nothing');
  const list = await cli(sb, ['secret', 'list']);
  t.match(list.stdout, /DEFINITION\s+ENV VALUES STORED\n.*config:lit\s+LOG_TOKEN, MODE/);
  t.notMatch(list.stdout, /no secrets stored/);
  const data = JSON.parse((await cli(sb, ['--json', 'secret', 'list'])).stdout);
  t.same(data, { secrets: [], definition_env: [{ definition: 'config:lit', names: ['LOG_TOKEN', 'MODE'] }] });
  t.notMatch(add.stdout + list.stdout + JSON.stringify(data), /canary/, 'the value itself is never printed');
  await cli(sb, ['mcp', 'remove', 'config:lit', '--hash', JSON.parse((await cli(sb, ['--json', 'mcp'])).stdout).definitions[0].hash]);
  t.equal((await cli(sb, ['secret', 'list'])).stdout, 'no secrets stored\n', 'removing the definition drops its values');
});
