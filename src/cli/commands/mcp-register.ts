/*
 * shadowcode mcp register: print the entry to paste into a coding tool's MCP
 * configuration. It edits no file, reads no secret, contacts nothing and starts
 * nothing. The entry text goes to stdout; where to merge it goes to stderr.
 */
import type { Registration } from '../../../gen/types/registration.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { hostCommand } from '../../register/host-command.js';
import { checkPersistent, installedEntry, launchCommand } from '../../register/launch.js';
import { type ClientName, httpRegistration, stdioRegistration } from '../../register/snippet.js';
import { checkGatewayUrl } from '../../register/url.js';
import { check } from '../../schema/validate.js';
import { defaultProfileDir } from '../../store/profile.js';
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
    let reg: Registration;
    if (url !== undefined || tokenEnv !== undefined) {
      if (url === undefined || tokenEnv === undefined) throw new ScError('SC_USAGE', 'HTTP registration needs both --url and --token-env');
      if (allowWrite || allowApprovals) throw new ScError('SC_REGISTER_UNSUPPORTED', "--allow-write and --allow-approvals do not apply to --url: a running gateway's permissions come from its own startup flags");
      reg = httpRegistration(client, name, checkGatewayUrl(url), tokenEnv, rules);
    } else {
      if (allowApprovals && !allowWrite) throw new ScError('SC_USAGE', '--allow-approvals needs --allow-write');
      const project = ctx.requireWorkspace('mcp register');
      const { node, entry } = installedEntry();
      checkPersistent([node, entry], ctx.io.env, rules.temporary_path_markers);
      // The client starts the server without our environment: a profile other than the default travels as --profile DIR.
      const profile = ctx.profile.dir === defaultProfileDir(ctx.io.env) ? undefined : ctx.profile.dir;
      reg = stdioRegistration(client, name, launchCommand(node, entry, { project, profile, allowWrite, allowApprovals }), rules);
      if (profile !== undefined) reg = { ...reg, profile };
    }
    const host = hostCommand(reg, rules);
    if (host !== undefined) reg = { ...reg, host_command: host };
    const userScope = rules.clients[client].user_scope;
    if (userScope !== undefined) reg = { ...reg, user_scope: userScope };
    check<Registration>('registration', reg, 'SC_INTERNAL', 'registration output');
    await enforce(ctx.gate(), ctx.request('cli:register', { args: { client, name, transport: reg.transport, allow_write: allowWrite, allow_approvals: allowApprovals } }), () => undefined);
    const err = ctx.io.stderr;
    err.write(`# Merge this ${reg.name} entry into ${reg.merge_into.join(' or ')}; keep your other servers.\n`);
    if (reg.profile !== undefined) err.write(`# The entry selects the profile in use, ${reg.profile}, with --profile: it is not the default profile.\n`);
    // The entry names one project: in a configuration every session reads, it would serve that project to all of them.
    if (userScope !== undefined) err.write(`# In ${userScope} it would bind every session, in any folder, to this one project.\n`);
    if (host !== undefined) err.write(`# Or let the client add it; this writes ${host.writes}${host.writes === userScope ? ', with that effect' : ''}:\n${host.text}\n`);
    return { data: reg, text: reg.text };
  },
};
