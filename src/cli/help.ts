/*
 * Usage text, generated from the command table and the command specs, and the
 * "unknown command" error with its suggestion, from the same table.
 *
 *   help words ─► lookup ─► a command's help (+ its subcommands) | a group's list | the top list
 *                       └─► SC_UNKNOWN_COMMAND naming the nearest command
 */
import { ScError } from '../errors.js';
import { COMMANDS, type Entry, group, lookup } from './commands/index.js';
import type { CommandSpec } from './spec.js';
import { nearest } from '../util/suggest.js';

const GLOBALS = `Global options:
  --project DIR     the project (must exist; resolved to its real path); --workspace DIR is the same
  --profile P       a profile name or directory (default: $SHADOWCODE_HOME, else $XDG_DATA_HOME/shadowcode)
  --json            print data as JSON (errors as {"error":{code,message,detail}})
  -h, --help        show help for a command
  -V, -v, --version print the version (also: shadowcode version)`;

export function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `shadowcode — a security-hardened MCP gateway for a coding-agent engine

Usage: shadowcode [global options] <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

${GLOBALS}

Example:
  shadowcode --project ~/src/app trust --level workspace
  shadowcode --project ~/src/app status

Run shadowcode help <command>, or shadowcode <command> --help, for a command's options
and examples. Run without a command, shadowcode prints this on stderr and exits 2.
`;
}

/** What a group's words mean together, where its subcommands serve different things. */
const GROUP_NOTES: Record<string, string> = {
  mcp: `Two kinds of MCP here. mcp serve and mcp register offer shadowcode itself to your coding
tool (the connected client). mcp, mcp list, add, enable, disable, remove and tools manage
external MCP servers: a granted server's tools are offered to the tasks shadowcode runs in
that project, each call approved, and never to the connected client.
`,
  model: `A model is what a task talks to: an API (openai-compatible, anthropic, ollama), or a
coding CLI that runs the task itself (claude-code, codex, acp), called a runner.
`,
};

export function groupHelp(word: string, entries: Entry[]): string {
  const width = Math.max(...entries.map((c) => c.name.length));
  const note = GROUP_NOTES[word];
  return `Usage: shadowcode ${word} <subcommand> [options]
${note ? `\n${note}` : ''}
Subcommands:
${entries.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Example:
  shadowcode ${entries[0]?.name ?? word} --help
`;
}

export function commandHelp(spec: CommandSpec, subcommands: readonly Entry[] = group(spec.name)): string {
  const opts = spec.options.map((o) => {
    const left = `--${o.name}${o.type === 'boolean' ? '' : ` ${o.value ?? 'VALUE'}`}`;
    const extra = [o.choices ? `one of ${o.choices.join('|')}` : '', o.default ? `default ${o.default}` : '', o.type === 'strings' ? 'repeatable' : '']
      .filter(Boolean)
      .join('; ');
    return { left, right: `${o.description}${extra ? ` (${extra})` : ''}` };
  });
  const width = Math.max(0, ...opts.map((o) => o.left.length));
  const usage = [
    'shadowcode',
    spec.workspace === 'required' ? '--project DIR' : spec.workspace === 'optional' ? '[--project DIR]' : '',
    spec.name,
    ...spec.options.map((o) => `[--${o.name}${o.type === 'boolean' ? '' : ` ${o.value ?? 'VALUE'}`}]`),
    ...spec.args.map((a) => (a.required ? a.name : `[${a.name}]`)),
  ].filter(Boolean);
  const parts = [`Usage: ${usage.join(' ')}`, '', spec.description ?? spec.summary];
  if (spec.args.length) parts.push('', 'Arguments:', ...spec.args.map((a) => `  ${a.name}  ${a.description}`));
  if (opts.length) parts.push('', 'Options:', ...opts.map((o) => `  ${o.left.padEnd(width)}  ${o.right}`));
  if (subcommands.length) {
    const w = Math.max(...subcommands.map((c) => c.name.length));
    const note = GROUP_NOTES[spec.name];
    if (note) parts.push('', note.trimEnd());
    parts.push('', 'Subcommands:', ...subcommands.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`));
  }
  parts.push('', GLOBALS, '', spec.examples.length > 1 ? 'Examples:' : 'Example:', ...spec.examples.map((e) => `  ${e}`), '');
  return parts.join('\n');
}

/**
 * The error for words that name no command. Within a group (`secret lst`,
 * `mcp ad`) the candidates are that group's subcommands; otherwise every
 * command's first word. Words after those are never repeated.
 */
export function unknownCommand(words: readonly string[]): ScError {
  const sub = words.length > 1 ? group(words[0] as string) : [];
  // Only the command words are named: a later word may be a secret typed in the wrong place.
  const typed = words.slice(0, sub.length ? 2 : 1).join(' ');
  const candidates = sub.length ? sub.map((c) => c.name) : [...new Set(COMMANDS.map((c) => c.name.split(' ')[0] as string))];
  const suggestion = nearest(sub.length ? typed : (words[0] as string), candidates);
  return new ScError('SC_UNKNOWN_COMMAND', `unknown command "${typed}"${suggestion ? `; did you mean "shadowcode ${suggestion}"?` : ''} (see shadowcode help)`, {
    command: typed,
    ...(suggestion ? { suggestion } : {}),
  });
}

/** What `shadowcode help WORDS…` and `WORDS… --help` print. */
export async function helpFor(words: readonly string[]): Promise<string> {
  if (words.length === 0) return topHelp();
  const found = lookup(words);
  if (found && found.used === words.length) {
    const { command } = await found.entry.load();
    return commandHelp(command);
  }
  const sub = group(words[0] as string);
  if (!found && sub.length && words.length === 1) return groupHelp(words[0] as string, sub);
  throw unknownCommand(found ? words.slice(0, found.used + 1) : words);
}
