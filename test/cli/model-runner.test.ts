// shadowcode model add/list/probe for coding CLI runners: the literal executable and
// fixed arguments in settings.json, the executable found and its --version in list,
// and a probe that runs nothing but --version.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';
import { FIXTURES } from '../fixtures/runner-task.js';

const settingsOf = (profile: string) => JSON.parse(readFileSync(join(profile, 'settings.json'), 'utf8'));
const CLAUDE = join(FIXTURES, 'fake-claude.mjs');
const ACP = join(FIXTURES, 'fake-acp-agent.mjs');

t.test('model add registers a runner by its literal command and fixed arguments', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', CLAUDE]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /added claude-code runner cc: ".*fake-claude\.mjs", the default/);
  const r2 = await cli(sb, ['--json', 'model', 'add', 'agent', '--provider', 'acp', '--command', ACP, '--arg', '--experimental-acp', '--arg', 'two words']);
  t.equal(r2.code, 0, r2.stderr);
  t.match(JSON.parse(r2.stdout), { endpoint: 'cli', credential: 'not_needed', default: false });
  t.same(settingsOf(sb.profile).models, [
    { id: 'cc', provider: 'claude-code', model: 'default', command: CLAUDE, args: [] },
    { id: 'agent', provider: 'acp', model: 'default', command: ACP, args: ['--experimental-acp', 'two words'] },
  ]);
});

t.test('model add refuses a runner without a usable absolute command, and runner options on an endpoint model', async (t) => {
  const sb = sandbox();
  const code = async (argv: string[]) => JSON.parse((await cli(sb, ['--json', 'model', 'add', ...argv])).stdout || '{}').error?.code;
  t.equal(await code(['x', '--provider', 'codex']), 'SC_USAGE', 'no --command');
  t.equal(await code(['x', '--provider', 'codex', '--command', 'codex']), 'SC_BAD_VALUE', 'a bare name is not looked up on PATH');
  t.equal(await code(['x', '--provider', 'codex', '--command', join(sb.root, 'no-codex')]), 'SC_RUNNER_NOT_FOUND');
  t.equal(await code(['x', '--provider', 'codex', '--command', CLAUDE, '--api-key-env', 'OPENAI_API_KEY']), 'SC_USAGE', 'a runner takes no key');
  t.equal(await code(['x', '--provider', 'ollama', '--model', 'm', '--command', CLAUDE]), 'SC_USAGE', '--command is for runners');
  t.notOk(existsSync(join(sb.profile, 'settings.json')) && settingsOf(sb.profile).models?.length, 'nothing was written');
});

t.test('model list shows each runner found with its --version; model probe runs only --version', async (t) => {
  const sb = sandbox();
  await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', CLAUDE, '--arg', '--fake-scenario', '--arg', 'hang']);
  await cli(sb, ['model', 'add', 'local', '--provider', 'ollama', '--model', 'qwen']);
  const list = await cli(sb, ['model', 'list']);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /\* cc +claude-code +.*fake-claude\.mjs --fake-scenario hang +2\.1\.197 \(Claude Code\)/);
  t.match(list.stdout, /local +ollama +qwen/);
  const json = JSON.parse((await cli(sb, ['--json', 'model', 'list'])).stdout);
  t.match(json.models[0], { id: 'cc', endpoint: 'cli', base_url: null, runner: { command: CLAUDE, found: true, version: '2.1.197 (Claude Code)', status: 'ok' } });
  t.same(json.models[0].runner.args, ['--fake-scenario', 'hang'], 'exactly its arguments');
  const probe = await cli(sb, ['--json', 'model', 'probe', 'cc']);
  t.equal(probe.code, 0, probe.stderr);
  t.match(JSON.parse(probe.stdout), { id: 'cc', ok: true, status: 'ok', version: '2.1.197 (Claude Code)' });
  // The fake prints its version only for exactly `--version`: neither the fixed args nor a prompt were passed.
  t.notMatch(JSON.parse(probe.stdout).version, /unexpected argv/, 'neither the fixed args nor a prompt');
});

t.test('model probe of a runner whose executable is gone exits 1 and says so', async (t) => {
  const sb = sandbox();
  const { copyFileSync, rmSync } = await import('node:fs');
  const copy = join(sb.root, 'claude');
  copyFileSync(CLAUDE, copy);
  const { chmodSync } = await import('node:fs');
  chmodSync(copy, 0o755);
  t.equal((await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', copy])).code, 0);
  rmSync(copy);
  const probe = await cli(sb, ['model', 'probe', 'cc']);
  t.equal(probe.code, 1);
  t.match(probe.stdout, /runner cc: FAILED \(runner command .* cannot be run/);
  t.match((await cli(sb, ['model', 'list'])).stdout, /\(not found\)/);
});

t.test("run warns when a coding CLI's settings that run code later changed during its task", async (t) => {
  const sb = sandbox('run-state');
  await cli(sb, ['--project', sb.project, 'trust']);
  mkdirSync(join(sb.root, '.claude'));
  const plugins = join(sb.root, '.claude', 'plugins');
  const record = join(sb.root, '.claude', 'record.json');
  const added = await cli(sb, ['model', 'add', 'cc', '--provider', 'claude-code', '--command', CLAUDE, '--arg', '--fake-scenario', '--arg', 'probe', '--arg', '--fake-record', '--arg', record, '--default']);
  t.equal(added.code, 0, added.stderr);
  // The stand-in creates ~/.claude/plugins from inside its sandbox, where nothing could cover it.
  const r = await spawnCli(sb, ['--project', sb.project, 'run', '--level', 'workspace', JSON.stringify({ write: [plugins] })]);
  t.equal(r.code, 0, r.stderr);
  t.ok(existsSync(plugins), 'the stand-in made it');
  t.match(r.stderr, new RegExp(`WARNING: While this task ran, ${plugins.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} changed .*check them before you do`), 'the terminal says so');
});
