/* shadowcode mcp remove config:NAME --hash H: remove a definition and every grant of it (ops/servers.ts). */
import { ScError } from '../../errors.js';
import { removeServer } from '../../ops/servers.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'mcp remove',
  summary: "Remove a stored external server definition and all its grants",
  description: 'Remove config:NAME and its grants in every project. Adding identical content again does not bring any grant back.',
  options: [{ name: 'hash', type: 'string', value: 'HASH', description: 'the current hash of the definition (required)' }],
  args: [{ name: 'ID', required: true, description: 'config:NAME' }],
  examples: ['shadowcode mcp remove config:my-tools --hash 3f9c…'],
  workspace: 'ignored',
  async run(ctx, { args, options }) {
    const id = args[0] as string;
    const hash = options.hash as string | undefined;
    if (!hash) throw new ScError('SC_USAGE', 'mcp remove needs --hash of the current content');
    const r = await removeServer(ctx.ops, { id, hash });
    return { data: r, text: `removed ${inert(id)} and ${r.grants_removed} grant(s)` };
  },
};
