/*
 * The one command a client takes to add a server itself, beside the entry to
 * merge by hand. Pure, like the entry: built from the registration.
 *
 *   claude (stdio or http) → claude mcp add-json NAME '<the entry inside mcpServers>'
 *                            (local scope: this project, only you; run in the project)
 *   codex (stdio)          → codex mcp add NAME -- COMMAND ARGS…  (writes the user-wide config)
 *   cursor, generic, codex over http → none
 *
 * The text is one shell line: every word that is not plainly safe is single-quoted,
 * so the shell passes `${…}` in a header on to the client untouched.
 */
import type { Clients } from '../../gen/types/clients.js';
import type { Registration } from '../../gen/types/registration.js';

export type HostCommand = NonNullable<Registration['host_command']>;

export function shellWord(s: string): string {
  return /^[A-Za-z0-9_\/.:=@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function hostCommand(reg: Registration, rules: Clients): HostCommand | undefined {
  const kind = rules.clients[reg.client].add_command;
  let argv: string[];
  let writes: string;
  if (kind === 'claude-add-json' && reg.config !== undefined) {
    const entry = (reg.config as { mcpServers: Record<string, unknown> }).mcpServers[reg.name];
    argv = ['claude', 'mcp', 'add-json', reg.name, JSON.stringify(entry)];
    writes = "~/.claude.json, for this project only (local scope); run it in the project's folder";
  } else if (kind === 'codex-mcp-add' && reg.transport === 'stdio' && reg.command !== undefined) {
    argv = ['codex', 'mcp', 'add', reg.name, '--', reg.command, ...(reg.args ?? [])];
    writes = rules.clients[reg.client].user_scope ?? '~/.codex/config.toml';
  } else {
    return undefined;
  }
  return { argv, text: argv.map(shellWord).join(' '), writes };
}
