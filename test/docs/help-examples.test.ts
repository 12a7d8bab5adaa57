/*
 * Examples that are shown but not run are still commands the CLI accepts: each
 * command's own --help examples (its CommandSpec) and the plain `shadowcode …`
 * lines of README.md and docs/. Each is parsed as the CLI parses it (command words,
 * options, choices, arguments), without running anything.
 */
import t from 'tap';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { blocks, DOCS, parseArgv, plainCommands, shadowcodeArgv, shellWords } from '../fixtures/readme.js';

t.test("each command's --help examples name that command and parse", async (t) => {
  for (const entry of COMMANDS) {
    const { command } = await entry.load();
    t.ok(command.examples.length > 0, `${command.name} has an example`);
    for (const example of command.examples) {
      const argv = shadowcodeArgv(shellWords(example, '/home/me').at(-1)?.argv ?? []);
      if (!argv) {
        t.fail(`${command.name}: example is not a shadowcode command: ${example}`);
        continue;
      }
      const parsed = await parseArgv(argv).catch((err: Error) => err);
      t.equal(parsed instanceof Error ? parsed.message : parsed?.name, command.name, `${command.name}: ${example}`);
    }
  }
});

t.test('the shell lines shown without a prompt in README.md and docs/ are commands the CLI accepts', async (t) => {
  let checked = 0;
  for (const page of DOCS) for (const block of blocks(page.text)) {
    for (const { line, command } of plainCommands(block)) {
      for (const stage of shellWords(command, '/home/me')) {
        const argv = shadowcodeArgv(stage.argv);
        if (!argv) continue;
        checked++;
        const parsed = await parseArgv(argv).then(
          () => 'ok',
          (err: Error) => err.message,
        );
        t.equal(parsed, 'ok', `${page.path}:${line}: ${command.trim()}`);
      }
    }
  }
  t.ok(checked >= 15, `checked ${checked} documented lines`);
});

t.test('a synopsis pasted as a command is caught', async (t) => {
  const argv = shadowcodeArgv(shellWords('shadowcode --project ~/src/app mcp register --client claude [--name shadowcode]', '/home/me')[0]?.argv ?? []);
  await t.rejects(parseArgv(argv ?? []), { code: 'SC_USAGE' });
  await t.rejects(parseArgv(['mcp', 'register', '--clinet', 'claude']), { code: 'SC_UNKNOWN_OPTION' });
  await t.rejects(parseArgv(['mcp', 'register', '--client', 'vscode']), { code: 'SC_BAD_VALUE' });
  await t.rejects(parseArgv(['mcp', 'ad', 'x.yaml']), /no command|no subcommand/);
});
