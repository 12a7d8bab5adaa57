/*
 * The CLI entry.
 *
 *   argv ─► splitGlobals ─► lookup command words ─► load that one module
 *        ─► parseCommand ─► spec.run(ctx) ─► renderOutput / renderError ─► exit code
 *
 * Everything any of it writes goes through guardIo (terminal.ts): no control character a
 * model, file, command or server wrote reaches the terminal raw.
 */
import { asScError, EXIT, ScError } from '../errors.js';
import { type CommittedAudit, onAuditCommitted } from '../store/audit.js';
import { tel } from '../telemetry/hooks.js';
import { VERSION } from '../version.js';
import { group, lookup } from './commands/index.js';
import { Ctx, type Io } from './context.js';
import { commandHelp, groupHelp, topHelp, unknownCommand } from './help.js';
import { renderError, renderOutput } from './output.js';
import { guardIo } from './terminal.js';
import { GLOBAL_OPTIONS, parseCommand, splitGlobals } from './parse.js';
import type { CommandSpec } from './spec.js';
import { nearest } from '../util/suggest.js';

/** A refusal says where its reasons are: the decision it names, explained by the same profile. */
function traced(e: ScError, profile: string | undefined): ScError {
  const id = e.detail?.decision_id;
  if (e.code !== 'SC_POLICY_DENIED' || typeof id !== 'string') return e;
  const flag = profile === undefined ? '' : ` --profile ${/^[\w./~-]+$/.test(profile) ? profile : JSON.stringify(profile)}`;
  return new ScError(e.code, `${e.message}; why: shadowcode${flag} policy explain --decision ${id}`, e.detail);
}

export async function main(argv: readonly string[], rawIo: Io): Promise<number> {
  let json = argv.includes('--json');
  const io = guardIo(rawIo, () => json);
  let ctx: Ctx | undefined;
  let profile: string | undefined;
  try {
    const { globals, rest } = splitGlobals(argv);
    json = globals.json;
    profile = globals.profile;
    // `shadowcode version` is the same as --version, as many CLIs accept both.
    if (globals.version || (rest.length === 1 && rest[0] === 'version')) {
      io.stdout.write(json ? `${JSON.stringify({ version: VERSION })}\n` : `${VERSION}\n`);
      return EXIT.ok;
    }
    const words: string[] = [];
    for (const w of rest) {
      if (w.startsWith('-')) break;
      words.push(w);
    }
    if (words.length === 0) {
      if (globals.help) {
        io.stdout.write(topHelp());
        return EXIT.ok;
      }
      if (rest.length === 0) {
        // No command is a usage error: the list goes to stderr, stdout stays empty for scripts.
        if (json) throw new ScError('SC_USAGE', 'no command given; see shadowcode help');
        io.stderr.write(topHelp());
        return EXIT.usage;
      }
      const name = (rest[0] as string).split('=')[0] as string;
      const suggestion = nearest(name, GLOBAL_OPTIONS);
      throw new ScError('SC_UNKNOWN_OPTION', `unknown option ${name}${suggestion ? `; did you mean ${suggestion}?` : ''} (see shadowcode help)`, { option: name, ...(suggestion ? { suggestion } : {}) });
    }
    const found = lookup(words);
    if (!found) {
      const sub = group(words[0] as string);
      if (sub.length && words.length === 1) {
        if (globals.help) {
          io.stdout.write(groupHelp(words[0] as string, sub));
          return EXIT.ok;
        }
        if (json) throw new ScError('SC_USAGE', `${words[0]} needs a subcommand: ${sub.map((c) => c.name).join(', ')}`);
        io.stderr.write(groupHelp(words[0] as string, sub));
        return EXIT.usage;
      }
      throw unknownCommand(words);
    }
    const { command: spec } = (await found.entry.load()) as { command: CommandSpec };
    // `mcp ad x`: a word after a command that has subcommands is a mistyped subcommand when the
    // command takes no arguments, or when the word is one slip away from a subcommand's name.
    const sub = group(spec.name);
    const next = words[found.used];
    if (next !== undefined && sub.length && (spec.args.length === 0 || nearest(next, sub.map((c) => c.name.slice(spec.name.length + 1))))) {
      throw unknownCommand(words.slice(0, found.used + 1));
    }
    if (globals.help) {
      io.stdout.write(commandHelp(spec));
      return EXIT.ok;
    }
    if (json && spec.json === false) throw new ScError('SC_USAGE', `${spec.name} cannot be combined with --json`);
    const input = parseCommand(spec, rest.slice(found.used));
    ctx = new Ctx(io, globals);
    if (spec.workspace === 'required') ctx.requireWorkspace(spec.name);
    const role = spec.telemetry?.(input) ?? null;
    // Loaded only for the few commands that can export, or a short one that committed audit rows: the rest never parse a line of it.
    let out: Awaited<ReturnType<typeof spec.run>>;
    // Not where an export already runs in this process (a host calling main()): its listener stays.
    if (role === null && spec.exportsAuditRows !== false && !tel()) {
      const committed: CommittedAudit[] = [];
      // Kept up to the export queue's cap: a long-running command (console) must not grow without bound.
      onAuditCommitted((rows) => {
        const room = (ctx as Ctx).policy().limits.telemetry.queue_items - committed.length;
        if (room > 0) committed.push(...rows.slice(0, room));
      });
      let thrown: { err: unknown } | null = null;
      try {
        out = await spec.run(ctx, input);
      } catch (err) {
        thrown = { err };
      } finally {
        onAuditCommitted(undefined);
      }
      // The answer (or the refusal) first: a slow collector delays the exit, never what the user reads.
      const e = thrown ? traced(asScError(thrown.err), profile) : null;
      if (e) renderError(e, json, io.stdout, io.stderr, io.env);
      else renderOutput(out!, json, io.stdout);
      // Then its audit rows, a refusal's included, go to the collector (when telemetry is configured) before the command ends.
      if (committed.length) {
        try {
          await (await import('./telemetry.js')).exportCommandRows(ctx, committed);
        } catch {
          /* best effort: the rows are in the audit log, and the export counts what it lost */
        }
      }
      return e ? e.exitCode : (out!.exitCode ?? EXIT.ok);
    } else if (role === null) out = await spec.run(ctx, input);
    else out = await (await import('./telemetry.js')).withTelemetry(ctx, role, () => spec.run(ctx as Ctx, input));
    renderOutput(out, json, io.stdout);
    return out.exitCode ?? EXIT.ok;
  } catch (err) {
    const e = traced(asScError(err), profile);
    renderError(e, json, io.stdout, io.stderr, io.env);
    return e.exitCode;
  } finally {
    ctx?.close();
  }
}

/**
 * A reader that goes away (`shadowcode audit list | head -1`, a host that closes its end of
 * `mcp serve`) is not a crash: what is written after it left is dropped, and the command
 * finishes what it was doing (its state, its children, its audit rows) as it would have.
 * Any other error on the stream is still thrown.
 */
function dropAfterBrokenPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
  });
}

export async function run(): Promise<void> {
  dropAfterBrokenPipe(process.stdout);
  dropAfterBrokenPipe(process.stderr);
  const code = await main(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  });
  process.exitCode = code;
}
