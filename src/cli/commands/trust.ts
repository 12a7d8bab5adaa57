/*
 * shadowcode trust: record that the user trusts the selected project, at a level,
 * and optionally whether its tasks may reach hosts that are not loopback.
 *
 *   --level (default: workspace, or the current one for a network change alone)
 *   --network | --no-network (neither: the network permission stays as it is)
 *   ─► gate cli:trust (a project that is /, the home or holds it: SC_PROJECT_HOLDS_HOME)
 *   ─► stored ─► one line: the level, and the network state that results, saying
 *      when it was kept from before
 */
import { asScError, ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { getProject, setTrust } from '../../store/projects.js';
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
    const path = ctx.requireWorkspace('trust');
    if (options.network && options['no-network']) throw new ScError('SC_USAGE', 'trust takes --network or --no-network, not both');
    const network = options.network ? true : options['no-network'] ? false : undefined;
    const current = getProject(ctx.db(), path);
    const level = (options.level as Level | undefined) ?? (network !== undefined && current.trusted ? current.level : 'workspace');
    let rec;
    try {
      rec = await enforce(ctx.gate(), ctx.request('cli:trust', { args: network === undefined ? { level } : { level, network } }), (t) => setTrust(t, ctx.db(), path, level, network));
    } catch (err) {
      const e = asScError(err);
      if (e.code !== 'SC_PROJECT_HOLDS_HOME') throw e;
      const home = ctx.homes().find((h) => h === path || h.startsWith(path === '/' ? '/' : `${path}/`));
      const what = path === '/' ? 'the root folder' : home === path ? 'your home folder' : `a folder holding your home folder ${home ?? ''}`.trimEnd();
      throw new ScError('SC_PROJECT_HOLDS_HOME', `${path} is ${what}: a task trusted there could change your shell start-up files, git and SSH configuration and read your keys, so it is not trusted. Trust the project's own folder instead (shadowcode --project DIR trust) [rule project-holds-home]`, { ...e.detail, project: path });
    }
    const kept = network === undefined && current.trusted;
    const state = rec.network ? 'network allowed' : 'network off';
    // A network permission granted earlier and kept without being asked for is the one to point out.
    const note = kept && rec.network ? ' (kept from before; --no-network withdraws it)' : '';
    return { data: { project: rec, network_changed: rec.network !== current.network }, text: `trusted ${rec.path} at level ${rec.level}, ${state}${note}` };
  },
};
