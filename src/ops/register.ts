/*
 * A client's configuration entry for this project's server, as an operation: built,
 * checked, decided, and returned for the caller to show. Nothing is written into
 * another application's files.
 *
 *   registration(ops, {client, name, url?, tokenEnv?, allowWrite, allowApprovals})
 *     url + tokenEnv ─► an entry for a running HTTP gateway (its permissions are its own)
 *     otherwise      ─► the installed shadowcode started over stdio for the selected project
 *                       (a temporary location refused; a profile other than the default named)
 *     ─► the client's own add command and user scope, if it has them
 *     ─► checked against schemas/registration.schema.json ─► gate cli:register ─► the entry
 */
import type { Registration } from '../../gen/types/registration.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { hostCommand } from '../register/host-command.js';
import { checkPersistent, installedEntry, launchCommand } from '../register/launch.js';
import { type ClientName, httpRegistration, stdioRegistration } from '../register/snippet.js';
import { checkGatewayUrl } from '../register/url.js';
import { check } from '../schema/validate.js';
import { defaultProfileDir } from '../store/profile.js';
import { type OpsContext, projectOf } from './context.js';

export type { ClientName, Registration };

export interface RegistrationInput {
  readonly client: ClientName;
  readonly name: string;
  /** A running gateway's address; with tokenEnv, the entry is for HTTP. */
  readonly url?: string;
  readonly tokenEnv?: string;
  readonly allowWrite: boolean;
  readonly allowApprovals: boolean;
}

export async function registration(ops: OpsContext, input: RegistrationInput): Promise<Registration> {
  const { client, name, url, tokenEnv, allowWrite, allowApprovals } = input;
  const rules = ops.policy.clients;
  let reg: Registration;
  if (url !== undefined || tokenEnv !== undefined) {
    if (url === undefined || tokenEnv === undefined) throw new ScError('SC_USAGE', 'HTTP registration needs both --url and --token-env');
    if (allowWrite || allowApprovals) throw new ScError('SC_REGISTER_UNSUPPORTED', "--allow-write and --allow-approvals do not apply to --url: a running gateway's permissions come from its own startup flags");
    reg = httpRegistration(client, name, checkGatewayUrl(url), tokenEnv, rules);
  } else {
    if (allowApprovals && !allowWrite) throw new ScError('SC_USAGE', '--allow-approvals needs --allow-write');
    const project = projectOf(ops, 'mcp register');
    const { node, entry } = installedEntry();
    checkPersistent([node, entry], ops.env, rules.temporary_path_markers);
    // The client starts the server without our environment: a profile other than the default travels as --profile DIR.
    const profile = ops.profileDir === defaultProfileDir(ops.env) ? undefined : ops.profileDir;
    reg = stdioRegistration(client, name, launchCommand(node, entry, { project, profile, allowWrite, allowApprovals }), rules);
    if (profile !== undefined) reg = { ...reg, profile };
  }
  const host = hostCommand(reg, rules);
  if (host !== undefined) reg = { ...reg, host_command: host };
  const userScope = rules.clients[client].user_scope;
  if (userScope !== undefined) reg = { ...reg, user_scope: userScope };
  check<Registration>('registration', reg, 'SC_INTERNAL', 'registration output');
  await enforce(ops.gate, ops.request('cli:register', { args: { client, name, transport: reg.transport, allow_write: allowWrite, allow_approvals: allowApprovals } }), () => undefined);
  return reg;
}
