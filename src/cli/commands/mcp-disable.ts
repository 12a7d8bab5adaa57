/* shadowcode mcp disable ID: withdraw a grant from this project. */
import { disableGrant } from '../../catalog/store.js';
import { catalogView } from '../../catalog/view.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { nearest } from '../../util/suggest.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'mcp disable',
  summary: "Withdraw an external server's grant from the project's tasks",
  description: "Withdraw the selected project's grant of a definition. Disabling one that is not enabled changes nothing and says so; an id that names no definition is an error.",
  options: [],
  args: [{ name: 'ID', required: true, description: 'the definition id' }],
  examples: ['shadowcode --project ~/src/app mcp disable config:my-tools'],
  workspace: 'required',
  async run(ctx, { args }) {
    const project = ctx.requireWorkspace('mcp disable');
    const id = args[0] as string;
    const removed = await enforce(ctx.gate(), ctx.request('cli:mcp.disable', { args: { id } }), (t) => disableGrant(t, ctx.db(), project, id));
    if (!removed) {
      // Not enabled is the state asked for, so it is a no-op; only an id that names nothing is an error.
      const known = catalogView(ctx.db(), project, ctx.policy()).definitions.map((d) => d.id);
      if (!known.includes(id)) {
        const suggestion = nearest(id, known);
        throw new ScError('SC_DEF_NOT_FOUND', `no definition ${id}${suggestion ? `; did you mean ${suggestion}?` : ''} (see shadowcode mcp)`, { id });
      }
      return { data: { id, disabled: true, changed: false }, text: `${inert(id)} is not enabled for ${inert(project)}; nothing changed` };
    }
    return { data: { id, disabled: true, changed: true }, text: `disabled ${inert(id)} for ${inert(project)}` };
  },
};
