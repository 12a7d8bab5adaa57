/* shadowcode mcp disable ID: withdraw a grant from this project (ops/servers.ts). */
import { disableServer } from '../../ops/servers.js';
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
    const r = await disableServer(ctx.ops, id);
    if (!r.changed) return { data: r, text: `${inert(id)} is not enabled for ${inert(project)}; nothing changed` };
    return { data: r, text: `disabled ${inert(id)} for ${inert(project)}` };
  },
};
