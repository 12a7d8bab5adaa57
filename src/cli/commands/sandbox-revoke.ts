/* shadowcode sandbox revoke PATH | --net HOST[:PORT] [--all-projects]: take one sandbox grant back (ops/sandbox.ts). */
import { ScError } from '../../errors.js';
import { revoke, type Scope } from '../../ops/sandbox.js';
import type { CommandSpec } from '../spec.js';
import { grantWords, scopeWords } from './sandbox-allow.js';

export const command: CommandSpec = {
  name: 'sandbox revoke',
  summary: 'Take back a folder, file or host granted with sandbox allow',
  description: 'Remove one grant from the selected project (or, with --all-projects, from every project). Processes started after this no longer see that path or reach that host; one already running keeps what it started with. The change is a gate decision in the audit log.',
  options: [
    { name: 'net', type: 'string', value: 'HOST[:PORT]', description: 'revoke a host instead of a path' },
    { name: 'all-projects', type: 'boolean', description: 'from the grants for every project' },
  ],
  args: [{ name: 'PATH', required: false, description: 'the path as granted (a path that is gone is matched as written)' }],
  examples: ['shadowcode --project ~/src/app sandbox revoke ~/src/shared', 'shadowcode --project ~/src/app sandbox revoke --net registry.example.com:443'],
  workspace: 'optional',
  async run(ctx, { args, options }) {
    const net = options.net as string | undefined;
    const path = args[0];
    if ((net === undefined) === (path === undefined)) throw new ScError('SC_USAGE', 'sandbox revoke takes a PATH or --net HOST[:PORT], one of them');
    const scope: Scope = options['all-projects'] === true ? { all_projects: true } : { project: ctx.requireWorkspace('sandbox revoke') };
    const r = await revoke(ctx.ops, scope, net !== undefined ? { host: net } : { path: path as string }, ctx.io.cwd);
    return { data: r, text: `revoked ${grantWords(r.grant)} from ${scopeWords(r)}` };
  },
};
