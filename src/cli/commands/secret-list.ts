/* shadowcode secret list: names and dates only. */
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

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
      ? table(['NAME', 'CREATED', 'UPDATED'], secrets.map((s) => [s.name, s.created_at, s.updated_at]), ctx.style)
      : 'no secrets stored';
    return { data: { secrets }, text };
  },
};
