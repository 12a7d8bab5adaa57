/* shadowcode mcp disable ID: withdraw a grant from this project. */
import { disableGrant } from '../../catalog/store.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp disable',
  summary: 'Withdraw a definition\'s grant from the project',
  options: [],
  args: [{ name: 'ID', required: true, description: 'the definition id' }],
  examples: ['shadowcode --workspace ~/src/app mcp disable config:my-tools'],
  workspace: 'required',
  async run(ctx, { args }) {
    const project = ctx.requireWorkspace('mcp disable');
    const id = args[0] as string;
    const removed = await enforce(ctx.gate(), ctx.request('cli:mcp.disable', { args: { id } }), (t) => disableGrant(t, ctx.db(), project, id));
    if (!removed) throw new ScError('SC_DEF_NOT_FOUND', `${id} is not enabled for ${project}`);
    return { data: { id, disabled: true }, text: `disabled ${id} for ${project}` };
  },
};
