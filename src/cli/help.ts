/* Usage text, generated from command specs. */
import { COMMANDS, type Entry } from './commands/index.js';
import type { CommandSpec } from './spec.js';

const GLOBALS = `Global options:
  --workspace DIR   the project (must exist; resolved to its real path)
  --profile P       a profile name or directory (default: $SHADOWCODE_HOME, else $XDG_DATA_HOME/shadowcode)
  --json            print data as JSON (errors as {"error":{code,message,detail}})
  -h, --help        show help for a command
  -V, --version     print the version`;

export function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `shadowcode — a security-hardened MCP gateway for a coding-agent engine

Usage: shadowcode [global options] <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

${GLOBALS}

Example:
  shadowcode --workspace ~/src/app trust --level workspace
  shadowcode --workspace ~/src/app status

Run shadowcode <command> --help for a command's options and examples.
`;
}

export function groupHelp(word: string, entries: Entry[]): string {
  const width = Math.max(...entries.map((c) => c.name.length));
  return `Usage: shadowcode ${word} <subcommand> [options]

Subcommands:
${entries.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Example:
  shadowcode ${entries[0]?.name ?? word} --help
`;
}

export function commandHelp(spec: CommandSpec): string {
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
    spec.workspace === 'required' ? '--workspace DIR' : spec.workspace === 'optional' ? '[--workspace DIR]' : '',
    spec.name,
    ...spec.options.map((o) => `[--${o.name}${o.type === 'boolean' ? '' : ` ${o.value ?? 'VALUE'}`}]`),
    ...spec.args.map((a) => (a.required ? a.name : `[${a.name}]`)),
  ].filter(Boolean);
  const parts = [`Usage: ${usage.join(' ')}`, '', spec.description ?? spec.summary];
  if (spec.args.length) parts.push('', 'Arguments:', ...spec.args.map((a) => `  ${a.name}  ${a.description}`));
  if (opts.length) parts.push('', 'Options:', ...opts.map((o) => `  ${o.left.padEnd(width)}  ${o.right}`));
  parts.push('', GLOBALS, '', spec.examples.length > 1 ? 'Examples:' : 'Example:', ...spec.examples.map((e) => `  ${e}`), '');
  return parts.join('\n');
}
