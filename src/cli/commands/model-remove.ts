/* shadowcode model remove ID: drop a model from settings.json (and the default, when it was that one). */
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { updateSettings } from '../../store/settings.js';
import type { CommandSpec } from '../spec.js';
import { didYouMean } from '../../util/suggest.js';

export const command: CommandSpec = {
  name: 'model remove',
  summary: 'Remove a configured model or runner',
  options: [],
  args: [{ name: 'ID', required: true, description: 'the model or runner to remove' }],
  examples: ['shadowcode model remove local'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const id = args[0] as string;
    let wasDefault = false;
    await enforce(ctx.gate(), ctx.request('cli:model.remove', { args: { id } }), (t) =>
      updateSettings(t, ctx.profile.dir, ctx.db(), (s) => {
        if (!(s.models ?? []).some((m) => m.id === id)) throw new ScError('SC_MODEL_NOT_FOUND', `no model named ${id.slice(0, 64)}${didYouMean(id, (s.models ?? []).map((m) => m.id)) || '; see shadowcode model list'}`);
        wasDefault = s.default_model === id;
        const { default_model, ...rest } = s;
        return { ...rest, models: (s.models ?? []).filter((m) => m.id !== id), ...(wasDefault || default_model === undefined ? {} : { default_model }) };
      }),
    );
    return { data: { id, removed: true, was_default: wasDefault }, text: `removed model ${id}${wasDefault ? ' (it was the default; none is set now)' : ''}` };
  },
};
