import t from 'tap';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { VERSION } from '../../src/version.js';
import { cli, sandbox, spawnCli } from '../fixtures/env.js';

t.test('every command has --help with usage and an example', async (t) => {
  const sb = sandbox();
  for (const c of COMMANDS) {
    const r = await cli(sb, [...c.name.split(' '), '--help']);
    t.equal(r.code, 0, c.name);
    t.match(r.stdout, new RegExp(`^Usage: shadowcode .*${c.name}`), `${c.name} usage`);
    t.match(r.stdout, /\nExamples?:\n {2}shadowcode /, `${c.name} example`);
  }
  const top = await cli(sb, ['--help']);
  for (const c of COMMANDS) t.match(top.stdout, c.name, `top-level help lists ${c.name}`);
});

t.test('every command is documented in the README with its name', async (t) => {
  const readme = (await import('node:fs')).readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const c of COMMANDS) t.ok(readme.includes(`\`${c.name}\``), `README names \`${c.name}\``);
});

t.test('sorted command list, so help reads in order', async (t) => {
  const names = COMMANDS.map((c) => c.name);
  t.same(names, [...names].sort());
});

t.test('usage errors exit 2 with a stable code', async (t) => {
  const sb = sandbox();
  const cases: Array<[string[], string]> = [
    [['bogus'], 'SC_UNKNOWN_COMMAND'],
    [['status', '--nope'], 'SC_UNKNOWN_OPTION'],
    [['status', 'extra'], 'SC_USAGE'],
    [['--workspace'], 'SC_USAGE'],
    [['--profile', 'a b', 'status'], 'SC_PROFILE_INVALID'],
    [['--workspace', '/', '--workspace', '/', 'status'], 'SC_USAGE'],
    [['trust', '--level'], 'SC_USAGE'],
  ];
  for (const [argv, code] of cases) {
    const r = await cli(sb, ['--json', ...argv]);
    t.equal(r.code, 2, argv.join(' '));
    t.equal(JSON.parse(r.stdout).error.code, code, argv.join(' '));
  }
  const none = await cli(sb, []);
  t.equal(none.code, 2, 'no command prints help and exits 2');
  t.match(none.stdout, /^shadowcode — /);
});

t.test('--version prints the package version, from the built CLI too', async (t) => {
  const sb = sandbox();
  t.equal((await cli(sb, ['--version'])).stdout, `${VERSION}\n`);
  const r = await spawnCli(sb, ['--version']);
  t.equal(r.stdout, `${VERSION}\n`);
});

t.test('global options may follow the command', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['status', '--json', '--workspace', sb.project]);
  t.equal(JSON.parse(r.stdout).project.path, sb.project);
});
