/* shadowcode trust: record that the user trusts the selected project, at a level. */
import { enforce } from '../../policy/gate.js';
import { setTrust } from '../../store/projects.js';
import type { Level } from '../../ticket.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'trust',
  summary: 'Trust the selected project at a permission level',
  description:
    'Trust the selected project. Only trusted projects can be changed through a connection started with --allow-write, and never beyond this level.',
  options: [{ name: 'level', type: 'string', value: 'LEVEL', choices: ['read_only', 'workspace', 'elevated'], default: 'workspace', description: 'the most any connection or task may do here' }],
  args: [],
  examples: ['shadowcode --workspace ~/src/app trust', 'shadowcode --workspace ~/src/app trust --level read_only'],
  workspace: 'required',
  async run(ctx, { options }) {
    const path = ctx.requireWorkspace('trust');
    const level = options.level as Level;
    const rec = await enforce(ctx.gate(), ctx.request('cli:trust', { args: { level } }), (t) => setTrust(t, ctx.db(), path, level));
    return { data: { project: rec }, text: `trusted ${rec.path} at level ${rec.level}` };
  },
};
