/* shadowcode untrust: withdraw trust (ops/trust.ts); the project drops back to read_only. */
import { untrust } from '../../ops/trust.js';
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
    ctx.requireWorkspace('untrust');
    const { project: rec } = await untrust(ctx.ops);
    return { data: { project: rec }, text: `${rec.path} is no longer trusted (read_only)` };
  },
};
