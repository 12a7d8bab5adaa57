/*
 * shadowcode trust: record that the user trusts the selected project, at a level,
 * and optionally whether its tasks may reach hosts that are not loopback (ops/trust.ts).
 *
 *   --level, --network | --no-network ─► ops trust ─► one line: the level, and the network
 *   state that results, saying when it was kept from before
 */
import { ScError } from '../../errors.js';
import { trust } from '../../ops/trust.js';
import type { Level } from '../../ticket.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'trust',
  summary: 'Trust the selected project at a trust level',
  description:
    "Trust the selected project. Only trusted projects can be changed through a connection started with --allow-write, and never beyond this level. --network lets its tasks reach models and external servers that are not on loopback; --no-network withdraws that (loopback models keep working); with neither, the network permission stays as it was, and the output says which it is. Without --level, a new trust is at workspace and a network change keeps the current level. A project that is /, your home folder or a folder holding it is refused (SC_PROJECT_HOLDS_HOME): trust the project's own folder.",
  options: [
    { name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], description: 'the most any connection or task may do here (default workspace)' },
    { name: 'network', type: 'boolean', description: 'allow tasks to reach remote (non-loopback) models and servers' },
    { name: 'no-network', type: 'boolean', description: 'withdraw network permission; loopback endpoints still work' },
  ],
  args: [],
  examples: ['shadowcode --project ~/src/app trust', 'shadowcode --project ~/src/app trust --level read_only', 'shadowcode --project ~/src/app trust --network', 'shadowcode --project ~/src/app trust --no-network'],
  workspace: 'required',
  async run(ctx, { options }) {
    ctx.requireWorkspace('trust');
    if (options.network && options['no-network']) throw new ScError('SC_USAGE', 'trust takes --network or --no-network, not both');
    const network = options.network ? true : options['no-network'] ? false : undefined;
    const r = await trust(ctx.ops, { ...(options.level !== undefined ? { level: options.level as Level } : {}), ...(network !== undefined ? { network } : {}) });
    const rec = r.project;
    const state = rec.network ? 'network allowed' : 'network off';
    // A network permission granted earlier and kept without being asked for is the one to point out.
    const note = r.network_kept && rec.network ? ' (kept from before; --no-network withdraws it)' : '';
    return { data: { project: rec, network_changed: r.network_changed }, text: `trusted ${rec.path} at level ${rec.level}, ${state}${note}` };
  },
};
