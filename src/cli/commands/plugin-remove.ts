/* shadowcode plugin remove NAME: remove its definitions and revoke their grants everywhere. */
import { removePlugin } from '../../ops/plugins.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'plugin remove',
  summary: 'Remove a plugin, its definitions and their grants',
  options: [],
  args: [{ name: 'NAME', required: true, description: 'the plugin name' }],
  examples: ['shadowcode plugin remove my-plugin'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const name = args[0] as string;
    const r = await removePlugin(ctx.ops, name);
    return { data: r, text: `removed plugin ${name}: ${r.removed.length} definition(s), ${r.grants_removed} grant(s) revoked` };
  },
};
