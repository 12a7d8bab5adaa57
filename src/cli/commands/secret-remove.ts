/* shadowcode secret remove NAME (ops/secrets.ts). */
import { removeSecret } from '../../ops/secrets.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'secret remove',
  summary: 'Remove a stored secret',
  options: [],
  args: [{ name: 'NAME', required: true, description: 'the secret to remove' }],
  examples: ['shadowcode secret remove SHADOW_MCP_HTTP_TOKEN'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const name = args[0] as string;
    const r = await removeSecret(ctx.ops, name);
    return { data: r, text: `removed secret ${name}` };
  },
};
