/* shadowcode secret list: names and dates only. */
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'secret list',
  summary: 'List stored secret names and dates (never values)',
  options: [],
  args: [],
  examples: ['shadowcode secret list', 'shadowcode --json secret list'],
  workspace: 'ignored',
  async run(ctx) {
    const secrets = ctx.secrets().list();
    const text = secrets.length
      ? secrets.map((s) => `${s.name}  created ${s.created_at}  updated ${s.updated_at}`).join('\n')
      : 'no secrets stored';
    return { data: { secrets }, text };
  },
};
