/* shadowcode secret remove NAME */
import { enforce } from '../../policy/gate.js';
import { checkSecretName } from '../../store/secrets.js';
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
    checkSecretName(name);
    const store = ctx.secrets();
    await enforce(ctx.gate(), ctx.request('cli:secret.remove', { args: { name } }), (t) => store.remove(t, name));
    return { data: { name, removed: true }, text: `removed secret ${name}` };
  },
};
