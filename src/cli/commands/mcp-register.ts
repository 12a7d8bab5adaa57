/*
 * shadowcode mcp register: print the entry to paste into a coding tool's MCP
 * configuration. It edits no file, reads no secret, contacts nothing and starts
 * nothing. The entry text goes to stdout; where to merge it goes to stderr.
 */
import { ScError } from '../../errors.js';
import { type ClientName, registration } from '../../ops/register.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp register',
  summary: "Print the entry that connects your coding tool (Codex, Claude Code, Cursor, generic) to this project",
  description:
    'Print the configuration entry that makes a coding tool launch `shadowcode mcp serve` for the selected project, or connect to a running HTTP gateway with --url and --token-env. Merge the entry into your existing configuration; do not overwrite other servers. Nothing is edited, started or contacted, and no secret is read.',
  options: [
    { name: 'client', type: 'string', value: 'CLIENT', choices: ['generic', 'codex', 'claude', 'cursor'], default: 'generic', description: 'the format to print' },
    { name: 'name', type: 'string', value: 'NAME', default: 'shadowcode', description: 'the server name in the client configuration' },
    { name: 'allow-write', type: 'boolean', description: 'launch the server with --allow-write (stdio only)' },
    { name: 'allow-approvals', type: 'boolean', description: 'launch the server with --allow-approvals; needs --allow-write (stdio only)' },
    { name: 'url', type: 'string', value: 'URL', description: 'a running gateway, http://127.0.0.1:PORT/mcp' },
    { name: 'token-env', type: 'string', value: 'NAME', description: "the variable holding the gateway's bearer token in the client's environment" },
  ],
  args: [],
  examples: [
    'shadowcode --project ~/src/app mcp register --client claude',
    'shadowcode --project ~/src/app mcp register --client codex --allow-write',
    'shadowcode mcp register --client cursor --url http://127.0.0.1:8765/mcp --token-env SHADOW_MCP_HTTP_TOKEN',
  ],
  workspace: 'optional',
  async run(ctx, { options }) {
    const client = options.client as ClientName;
    const name = options.name as string;
    const allowWrite = options['allow-write'] === true;
    const allowApprovals = options['allow-approvals'] === true;
    const url = options.url as string | undefined;
    const tokenEnv = options['token-env'] as string | undefined;
    const rules = ctx.policy().clients;
    if (ctx.json && !rules.clients[client].json_output) throw new ScError('SC_REGISTER_UNSUPPORTED', `--client ${client} prints TOML; run it without --json`);
    // The workspace message of the CLI, before the operation's own, for a stdio entry without --project.
    if (url === undefined && tokenEnv === undefined && !(allowApprovals && !allowWrite)) ctx.requireWorkspace('mcp register');
    const reg = await registration(ctx.ops, { client, name, allowWrite, allowApprovals, ...(url !== undefined ? { url } : {}), ...(tokenEnv !== undefined ? { tokenEnv } : {}) });
    const host = reg.host_command;
    const userScope = reg.user_scope;
    const err = ctx.io.stderr;
    err.write(`# Merge this ${reg.name} entry into ${reg.merge_into.join(' or ')}; keep your other servers.\n`);
    if (reg.profile !== undefined) err.write(`# The entry selects the profile in use, ${reg.profile}, with --profile: it is not the default profile.\n`);
    // The entry names one project: in a configuration every session reads, it would serve that project to all of them.
    if (userScope !== undefined) err.write(`# In ${userScope} it would bind every session, in any folder, to this one project.\n`);
    if (host !== undefined) err.write(`# Or let the client add it; this writes ${host.writes}${host.writes === userScope ? ', with that effect' : ''}:\n${host.text}\n`);
    return { data: reg, text: reg.text };
  },
};
