/*
 * The configuration entry for one client, as data and as the exact text to
 * paste. Pure: the same inputs give the same output, so it is property-tested.
 *
 *   stdio: generic/claude/cursor → {"mcpServers":{NAME:{…command, args}}}, codex → [mcp_servers.NAME]
 *   http:  codex → url + bearer_token_env_var; claude → type http + "Bearer ${NAME}";
 *          cursor → url + "Bearer ${env:NAME}"; generic is refused
 */
import type { Clients } from '../../gen/types/clients.js';
import type { Registration } from '../../gen/types/registration.js';
import { ScError } from '../errors.js';
import type { Launch } from './launch.js';
import { tomlArray, tomlKey, tomlString } from './toml.js';

export type ClientName = 'generic' | 'codex' | 'claude' | 'cursor';
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export function checkServerName(name: string): void {
  if (!SERVER_NAME.test(name)) throw new ScError('SC_BAD_VALUE', `--name must match ${SERVER_NAME.source} (letters, digits, - and _)`);
}

function refuseExpansion(client: ClientName, values: readonly string[]): void {
  const hit = values.find((v) => v.includes('${'));
  if (hit !== undefined) {
    throw new ScError('SC_REGISTER_EXPANSION', `${client} would expand the "\${" in ${JSON.stringify(hit)}; move shadowcode or the project to a path without it (or register a wrapper script)`, { client });
  }
}

export function stdioRegistration(client: ClientName, name: string, launch: Launch, rules: Clients): Registration {
  checkServerName(name);
  const c = rules.clients[client];
  if (c.expands_placeholders) refuseExpansion(client, [launch.command, ...launch.args]);
  if (client === 'codex') {
    const text = `[mcp_servers.${tomlKey(name)}]\ncommand = ${tomlString(launch.command)}\nargs = ${tomlArray(launch.args)}\n`;
    return { client, name, transport: 'stdio', format: 'toml', command: launch.command, args: launch.args, text, merge_into: [...c.merge_into] };
  }
  const entry = client === 'generic' ? { command: launch.command, args: launch.args } : { type: 'stdio', command: launch.command, args: launch.args };
  const config = { mcpServers: { [name]: entry } };
  return { client, name, transport: 'stdio', format: 'json', command: launch.command, args: launch.args, config, text: `${JSON.stringify(config, null, 2)}\n`, merge_into: [...c.merge_into] };
}

export function checkTokenEnv(client: ClientName, tokenEnv: string, rules: Clients): void {
  if (!ENV_NAME.test(tokenEnv)) throw new ScError('SC_REGISTER_TOKEN_ENV_INVALID', `--token-env must be an environment variable name (${ENV_NAME.source})`);
  const c = rules.clients[client];
  if (c.withheld_env.includes(tokenEnv) || c.withheld_env_prefixes.some((p) => tokenEnv.startsWith(p))) {
    throw new ScError('SC_REGISTER_TOKEN_ENV_INVALID', `${client} withholds ${tokenEnv} from header expansion; use a dedicated variable such as SHADOW_MCP_HTTP_TOKEN`, { client, token_env: tokenEnv });
  }
}

export function httpRegistration(client: ClientName, name: string, url: string, tokenEnv: string, rules: Clients): Registration {
  checkServerName(name);
  const c = rules.clients[client];
  if (!c.http) throw new ScError('SC_REGISTER_UNSUPPORTED', `HTTP registration needs --client codex, claude or cursor: credential-variable syntax differs between clients`);
  checkTokenEnv(client, tokenEnv, rules);
  if (c.expands_placeholders) refuseExpansion(client, [url]);
  const base = { client, name, transport: 'http' as const, url, token_env: tokenEnv, merge_into: [...c.merge_into] };
  if (client === 'codex') {
    return { ...base, format: 'toml', text: `[mcp_servers.${tomlKey(name)}]\nurl = ${tomlString(url)}\nbearer_token_env_var = ${tomlString(tokenEnv)}\n` };
  }
  const entry =
    client === 'claude'
      ? { type: 'http', url, headers: { Authorization: `Bearer \${${tokenEnv}}` } }
      : { url, headers: { Authorization: `Bearer \${env:${tokenEnv}}` } };
  const config = { mcpServers: { [name]: entry } };
  return { ...base, format: 'json', config, text: `${JSON.stringify(config, null, 2)}\n` };
}
