/* shadowcode untrust: withdraw trust; the project drops back to read_only. */
import { enforce } from '../../policy/gate.js';
import { removeTrust } from '../../store/projects.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'untrust',
  summary: 'Withdraw trust from the selected project',
  description: 'Withdraw trust from the selected project. Connections to it become read-only, whatever their flags.',
  options: [],
  args: [],
  examples: ['shadowcode --project ~/src/app untrust'],
  workspace: 'required',
  async run(ctx) {
    const path = ctx.requireWorkspace('untrust');
    const rec = await enforce(ctx.gate(), ctx.request('cli:untrust'), (t) => removeTrust(t, ctx.db(), path));
    return { data: { project: rec }, text: `${rec.path} is no longer trusted (read_only)` };
  },
};
