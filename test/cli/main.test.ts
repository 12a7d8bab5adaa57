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
  t.equal(none.code, 2, 'no command is a usage error');
  t.match(none.stderr, /^shadowcode — /, 'the command list goes to stderr');
  t.equal(none.stdout, '', 'stdout stays empty');
  t.equal(JSON.parse((await cli(sb, ['--json'])).stdout).error.code, 'SC_USAGE');
  const group = await cli(sb, ['secret']);
  t.equal(group.code, 2, 'a group word alone is a usage error too');
  t.match(group.stderr, /Subcommands:\n {2}secret list/);
});

t.test('suggests the nearest command, subcommand or option for a typo', async (t) => {
  const sb = sandbox();
  const cases: Array<[string[], string, RegExp]> = [
    [['stauts'], 'SC_UNKNOWN_COMMAND', /unknown command "stauts"; did you mean "shadowcode status"\?/],
    [['secret', 'lst'], 'SC_UNKNOWN_COMMAND', /unknown command "secret lst"; did you mean "shadowcode secret list"\?/],
    [['mcp', 'ad', 'x'], 'SC_UNKNOWN_COMMAND', /unknown command "mcp ad"; did you mean "shadowcode mcp add"\?/],
    [['approvals', 'aprove', 'x'], 'SC_UNKNOWN_COMMAND', /unknown command "approvals aprove"; did you mean "shadowcode approvals approve"\?/],
    [['--jsn', 'status'], 'SC_UNKNOWN_OPTION', /unknown option --jsn; did you mean --json\?/],
    [['status', '--jsn'], 'SC_UNKNOWN_OPTION', /status has no option --jsn; did you mean --json\?/],
    [['trust', '--levle', 'workspace'], 'SC_UNKNOWN_OPTION', /trust has no option --levle; did you mean --level\?/],
    [['help', 'stauts'], 'SC_UNKNOWN_COMMAND', /did you mean "shadowcode status"\?/],
  ];
  for (const [argv, code, message] of cases) {
    const r = await cli(sb, argv);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.stderr, message, argv.join(' '));
    t.match(r.stderr, `[${code}]`, argv.join(' '));
  }
  const far = await cli(sb, ['--json', 'xyzzyplugh']);
  t.notOk(JSON.parse(far.stdout).error.detail.suggestion, 'nothing is suggested when nothing is close');
  t.equal(JSON.parse((await cli(sb, ['--json', 'stauts'])).stdout).error.detail.suggestion, 'status');
});

t.test('every command is suggested for its own near-miss, so new commands get suggestions for free', async (t) => {
  const sb = sandbox();
  for (const c of COMMANDS) {
    const words = c.name.split(' ');
    const last = words[words.length - 1] as string;
    if (last.length < 4) continue;
    // Swap two middle letters: a typo of exactly one transposition.
    const typo = last.slice(0, 1) + last[2] + last[1] + last.slice(3);
    if (typo === last) continue;
    const r = await cli(sb, ['--json', ...words.slice(0, -1), typo]);
    const e = JSON.parse(r.stdout).error;
    t.equal(e?.code, 'SC_UNKNOWN_COMMAND', `${c.name} as ${typo}`);
    t.equal(e?.detail?.suggestion, words.length > 1 ? c.name : last, `${typo} suggests ${c.name}`);
  }
});

t.test('help COMMAND prints the same text as COMMAND --help; mcp --help lists its subcommands', async (t) => {
  const sb = sandbox();
  for (const c of COMMANDS) {
    const a = await cli(sb, ['help', ...c.name.split(' ')]);
    const b = await cli(sb, [...c.name.split(' '), '--help']);
    t.equal(a.code, 0, c.name);
    t.equal(a.stdout, b.stdout, `help ${c.name}`);
  }
  t.equal((await cli(sb, ['help'])).stdout, (await cli(sb, ['--help'])).stdout);
  const mcp = await cli(sb, ['mcp', '--help']);
  t.match(mcp.stdout, /\nSubcommands:\n/);
  for (const c of COMMANDS.filter((c) => c.name.startsWith('mcp '))) t.match(mcp.stdout, `\n  ${c.name} `, `mcp --help lists ${c.name}`);
  const audit = await cli(sb, ['audit', '--help']);
  t.equal(audit.code, 0);
  t.match(audit.stdout, /Subcommands:\n {2}audit list +List the audit log.*\n {2}audit show .*\n {2}audit verify /);
});

t.test('group words take list: jobs list is jobs, mcp list is mcp, approvals list is approvals', async (t) => {
  const sb = sandbox();
  for (const [word, withProject] of [['jobs', true], ['mcp', true], ['mcp', false], ['approvals', true]] as const) {
    const at = withProject ? ['--project', sb.project] : [];
    const plain = await cli(sb, [...at, '--json', word]);
    const listed = await cli(sb, [...at, '--json', word, 'list']);
    t.equal(listed.code, 0, `${word} list: ${listed.stderr}`);
    t.same(JSON.parse(listed.stdout), JSON.parse(plain.stdout), `${word} list prints what ${word} prints`);
  }
  const bare = await cli(sb, ['--project', sb.project, 'jobs', 'lst']);
  t.match(bare.stderr, /did you mean "shadowcode jobs list"\?/, 'a typo of list is named');
});

t.test('--project and --workspace name the same project, and only once', async (t) => {
  const sb = sandbox();
  const a = await cli(sb, ['--json', '--project', sb.project, 'status']);
  const b = await cli(sb, ['--json', '--workspace', sb.project, 'status']);
  t.equal(JSON.parse(a.stdout).project.path, sb.project);
  t.same(JSON.parse(a.stdout).project, JSON.parse(b.stdout).project);
  const twice = await cli(sb, ['--project', sb.project, '--workspace', sb.project, 'status']);
  t.equal(twice.code, 2);
  t.match(twice.stderr, /the project was given twice \(--project and --workspace name the same thing\) \[SC_USAGE\]/);
  const missing = await cli(sb, ['jobs']);
  t.match(missing.stderr, /jobs needs the project: --project DIR \(or --workspace DIR\)/);
});

t.test('--version prints the package version, from the built CLI too', async (t) => {
  const sb = sandbox();
  t.equal((await cli(sb, ['--version'])).stdout, `${VERSION}\n`);
  const r = await spawnCli(sb, ['--version']);
  t.equal(r.stdout, `${VERSION}\n`);
});

t.test('a usage error never repeats a stray word, which may be a secret typed in the wrong place', async (t) => {
  const sb = sandbox();
  const secret = 'sk-live-SECRET123';
  const cases: Array<[string[], RegExp]> = [
    [['secret', 'sett', secret], /unknown command "secret sett"; did you mean "shadowcode secret set"\?/],
    [['secret', 'set', 'name', secret], /secret set takes NAME; got 2 arguments/],
    [['model', 'add', 'm', '--provider', secret, '--model', 'x'], /--provider must be one of /],
    [['mcp', 'regster', secret], /unknown command "mcp regster"; did you mean "shadowcode mcp register"\?/],
  ];
  for (const [argv, message] of cases) {
    for (const json of [false, true]) {
      const r = await cli(sb, json ? ['--json', ...argv] : argv);
      t.equal(r.code, 2, argv.join(' '));
      t.match(json ? JSON.parse(r.stdout).error.message : r.stderr, message, argv.join(' '));
      t.notMatch(r.stdout + r.stderr, /SECRET123/, `${argv[0]} ${argv[1]}: the stray word is not printed${json ? ' (--json)' : ''}`);
    }
  }
  const typo = await cli(sb, ['model', 'add', 'm', '--provider', 'olama', '--model', 'x']);
  t.match(typo.stderr, /--provider must be one of openai-compatible, anthropic, ollama, claude-code, codex, acp; did you mean ollama\?/);
});

t.test('version, -v, approvals list and plugin list are accepted', async (t) => {
  const sb = sandbox();
  for (const argv of [['version'], ['-v'], ['-V'], ['--version']]) t.equal((await cli(sb, argv)).stdout, `${VERSION}\n`, argv.join(' '));
  t.same(JSON.parse((await cli(sb, ['--json', 'version'])).stdout), { version: VERSION });
  const list = await cli(sb, ['--project', sb.project, 'approvals', 'list']);
  t.equal(list.code, 0, list.stderr);
  t.equal(list.stdout, (await cli(sb, ['--project', sb.project, 'approvals'])).stdout, 'the same list as approvals');
  const plugins = await cli(sb, ['plugin', 'list']);
  t.equal(plugins.code, 0, plugins.stderr);
  t.equal(plugins.stdout, 'no plugins installed\n');
});

t.test('global options may follow the command', async (t) => {
  const sb = sandbox();
  const r = await cli(sb, ['status', '--json', '--project', sb.project]);
  t.equal(JSON.parse(r.stdout).project.path, sb.project);
});
