/* shadowcode model remove ID: drop a model from settings.json (and the default, when it was that one). */
import { removeModel } from '../../ops/models.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'model remove',
  summary: 'Remove a configured model or runner',
  options: [],
  args: [{ name: 'ID', required: true, description: 'the model or runner to remove' }],
  examples: ['shadowcode model remove local'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const id = args[0] as string;
    const r = await removeModel(ctx.ops, id);
    return { data: r, text: `removed model ${id}${r.was_default ? ' (it was the default; none is set now)' : ''}` };
  },
};
