/*
 * shadowcode trust: record that the user trusts the selected project, at a level,
 * and optionally whether its tasks may reach hosts that are not loopback.
 * `--network`/`--no-network` alone keep a trusted project's level.
 */
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { getProject, setTrust } from '../../store/projects.js';
import type { Level } from '../../ticket.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'trust',
  summary: 'Trust the selected project at a permission level',
  description:
    'Trust the selected project. Only trusted projects can be changed through a connection started with --allow-write, and never beyond this level. --network lets its tasks reach models and MCP servers that are not on loopback; --no-network withdraws that (loopback models keep working). Without --level, a new trust is at workspace and a network change keeps the current level.',
  options: [
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], description: 'the most any connection or task may do here (default workspace)' },
    { name: 'network', type: 'boolean', description: 'allow tasks to reach remote (non-loopback) models and servers' },
    { name: 'no-network', type: 'boolean', description: 'withdraw network permission; loopback endpoints still work' },
  ],
  args: [],
  examples: ['shadowcode --project ~/src/app trust', 'shadowcode --project ~/src/app trust --level read_only', 'shadowcode --project ~/src/app trust --network', 'shadowcode --project ~/src/app trust --no-network'],
  workspace: 'required',
  async run(ctx, { options }) {
    const path = ctx.requireWorkspace('trust');
    if (options.network && options['no-network']) throw new ScError('SC_USAGE', 'trust takes --network or --no-network, not both');
    const network = options.network ? true : options['no-network'] ? false : undefined;
    const current = getProject(ctx.db(), path);
    const level = (options.level as Level | undefined) ?? (network !== undefined && current.trusted ? current.level : 'workspace');
    const rec = await enforce(ctx.gate(), ctx.request('cli:trust', { args: network === undefined ? { level } : { level, network } }), (t) => setTrust(t, ctx.db(), path, level, network));
    return { data: { project: rec }, text: `trusted ${rec.path} at level ${rec.level}${rec.network ? ', network allowed' : network === false ? ', network off' : ''}` };
  },
};
