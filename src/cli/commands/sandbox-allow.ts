/*
 * shadowcode sandbox allow PATH [--write] [--secret] | --net HOST[:PORT] [--all-projects]:
 * add one folder, file or host to what sandboxed processes of the project (or of
 * every project) may reach. A gate decision, recorded with how it ended (ops/sandbox.ts).
 */
import { ScError } from '../../errors.js';
import { allow, type GrantResult, type Scope } from '../../ops/sandbox.js';
import { hostPortText } from '../../policy/net.js';
import type { CommandSpec } from '../spec.js';

/** One grant in words: `read-write /home/me/data`, `the host api.example.com:443`. */
export function grantWords(g: GrantResult['grant']): string {
  if ('host' in g) return `the host ${hostPortText(g)}${g.private ? ' (also at a loopback or private address)' : ''}`;
  return `${g.write ? 'read-write' : 'read-only'} ${g.path}${g.secret ? ' (SECRET: hidden by default; every approval names it)' : ''}`;
}

export function scopeWords(r: Pick<GrantResult, 'project'>): string {
  return r.project ? `sandboxed processes of ${r.project}` : 'sandboxed processes of every project';
}

export const command: CommandSpec = {
  name: 'sandbox allow',
  summary: 'Let sandboxed processes of the project see a folder or file, or reach a host',
  description:
    'Add to what every sandboxed command, test job, background process and coding-CLI runner of the selected project (or, with --all-projects, of every project) may reach: a folder or file, read-only or with --write read-write, at the same path; or with --net one host (HOST or HOST:PORT; any port without one), reached only through shadowcode\'s proxy, each connection a recorded decision; a name that resolves to a loopback or private address is refused unless granted with --private (a grant of localhost or of an address names it already). The grant is kept in the profile, never in the project. The profile (or a folder inside or above it) and the project\'s protected paths are never granted; a path the sandbox hides as secret (~/.ssh, ~/.aws, ...: policy/sandbox.json "hidden") only with --secret, and every command approval then names it. Each grant is a gate decision in the audit log. An MCP server gets only what its own definition declares (sandbox: {read, write, network}).',
  options: [
    { name: 'write', type: 'boolean', description: 'read-write instead of read-only' },
    { name: 'net', type: 'string', value: 'HOST[:PORT]', description: 'grant a host instead of a path' },
    { name: 'secret', type: 'boolean', description: 'allow a path the sandbox hides as secret' },
    { name: 'private', type: 'boolean', description: 'with --net: the name may resolve to a loopback or private address (an intranet host)' },
    { name: 'all-projects', type: 'boolean', description: 'for every project, not only the selected one' },
  ],
  args: [{ name: 'PATH', required: false, description: 'an existing folder or file (stored as its real path)' }],
  examples: ['shadowcode --project ~/src/app sandbox allow ~/src/shared', 'shadowcode --project ~/src/app sandbox allow ~/.cache/app-data --write', 'shadowcode --project ~/src/app sandbox allow --net registry.example.com:443', 'shadowcode sandbox allow --all-projects /opt/datasets'],
  workspace: 'optional',
  async run(ctx, { args, options }) {
    const net = options.net as string | undefined;
    const path = args[0];
    if ((net === undefined) === (path === undefined)) throw new ScError('SC_USAGE', 'sandbox allow takes a PATH or --net HOST[:PORT], one of them');
    if (net !== undefined && (options.write || options.secret)) throw new ScError('SC_USAGE', '--write and --secret are for a PATH, not for --net');
    if (net === undefined && options.private) throw new ScError('SC_USAGE', '--private is for --net HOST, not for a PATH');
    const scope: Scope = options['all-projects'] === true ? { all_projects: true } : { project: ctx.requireWorkspace('sandbox allow') };
    const r = await allow(ctx.ops, scope, net !== undefined ? { host: net, private: options.private === true } : { path: path as string, write: options.write === true, secret: options.secret === true }, ctx.io.cwd);
    const how = 'host' in r.grant ? "through shadowcode's proxy, each connection recorded" : 'at the same path';
    const text = r.changed
      ? `granted ${grantWords(r.grant)} to ${scopeWords(r)}, ${how}\nsee it with: shadowcode${r.project ? ` --project ${r.project}` : ''} sandbox show`
      : `already granted: ${grantWords(r.grant)} to ${scopeWords(r)}; nothing changed`;
    return { data: r, text };
  },
};
