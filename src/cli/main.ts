/*
 * The CLI entry.
 *
 *   argv ─► splitGlobals ─► lookup command words ─► load that one module
 *        ─► parseCommand ─► spec.run(ctx) ─► renderOutput / renderError ─► exit code
 */
import { asScError, EXIT, ScError } from '../errors.js';
import { VERSION } from '../version.js';
import { group, lookup } from './commands/index.js';
import { Ctx, type Io } from './context.js';
import { commandHelp, groupHelp, topHelp } from './help.js';
import { renderError, renderOutput } from './output.js';
import { parseCommand, splitGlobals } from './parse.js';
import type { CommandSpec } from './spec.js';

export async function main(argv: readonly string[], io: Io): Promise<number> {
  let json = argv.includes('--json');
  let ctx: Ctx | undefined;
  try {
    const { globals, rest } = splitGlobals(argv);
    json = globals.json;
    if (globals.version) {
      io.stdout.write(json ? `${JSON.stringify({ version: VERSION })}\n` : `${VERSION}\n`);
      return EXIT.ok;
    }
    const words: string[] = [];
    for (const w of rest) {
      if (w.startsWith('-')) break;
      words.push(w);
    }
    if (words.length === 0) {
      if (globals.help || rest.length === 0) {
        io.stdout.write(topHelp());
        return rest.length === 0 && !globals.help ? EXIT.usage : EXIT.ok;
      }
      throw new ScError('SC_USAGE', `expected a command before ${rest[0]}; see shadowcode --help`);
    }
    const found = lookup(words);
    if (!found) {
      const sub = group(words[0] as string);
      if (sub.length && words.length === 1) {
        io.stdout.write(groupHelp(words[0] as string, sub));
        return globals.help ? EXIT.ok : EXIT.usage;
      }
      throw new ScError('SC_UNKNOWN_COMMAND', `unknown command "${words.join(' ')}"; see shadowcode --help`, { command: words.join(' ') });
    }
    const { command: spec } = (await found.entry.load()) as { command: CommandSpec };
    if (globals.help) {
      io.stdout.write(commandHelp(spec));
      return EXIT.ok;
    }
    if (json && spec.json === false) throw new ScError('SC_USAGE', `${spec.name} cannot be combined with --json`);
    const input = parseCommand(spec, rest.slice(found.used));
    ctx = new Ctx(io, globals);
    if (spec.workspace === 'required') ctx.requireWorkspace(spec.name);
    const out = await spec.run(ctx, input);
    renderOutput(out, json, io.stdout);
    return out.exitCode ?? EXIT.ok;
  } catch (err) {
    const e = asScError(err);
    renderError(e, json, io.stdout, io.stderr);
    return e.exitCode;
  } finally {
    ctx?.close();
  }
}

export async function run(): Promise<void> {
  const code = await main(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  });
  process.exitCode = code;
}
