/* shadowcode help [COMMAND…]: the same text as --help, for the whole CLI, a group or one command. */
import { helpFor } from '../help.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'help',
  summary: 'Show help for shadowcode, a command group or one command',
  description: 'Print the usage of shadowcode, of a command group (its subcommands) or of one command (options, arguments, subcommands, examples). A mistyped command gets the nearest one suggested.',
  options: [],
  args: [{ name: 'COMMAND', required: false, variadic: true, description: 'the command words, e.g. mcp add' }],
  examples: ['shadowcode help', 'shadowcode help mcp add'],
  workspace: 'ignored',
  async run(_ctx, { args }) {
    const text = await helpFor(args);
    return { data: { command: args.join(' '), help: text }, text };
  },
};
