/*
 * shadowcode why PATH: the recorded history of one project file, newest
 * first: which task changed it, when, how and why; the same history
 * shadow_why gives an MCP host.
 *
 *   PATH, --limit ─► ops why (confined to the project ─► gate cli:why ─► pathHistory) ─► table | --json
 */
import { why } from '../../ops/history.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'why',
  summary: "Show a file's recorded changes: which task, when and why",
  description: 'Show the changes shadowcode recorded for one file of the selected project, newest first: the task that made each (see shadowcode review TASK), when, whether it wrote, deleted or rolled back, and why. PATH is relative to the project, or an absolute path inside it.',
  options: [{ name: 'limit', type: 'string', value: 'N', description: 'how many changes to show (default 20, at most 100)' }],
  args: [{ name: 'PATH', required: true, description: 'a file of the project' }],
  examples: ['shadowcode --project ~/src/app why src/greet.js', 'shadowcode --project ~/src/app --json why src/greet.js'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    ctx.requireWorkspace('why');
    const { path, changes } = await why(ctx.ops, { path: args[0] as string, ...(options.limit !== undefined ? { limit: Number(options.limit) } : {}) });
    const text = changes.length
      ? table(['WHEN', 'TASK', 'CHANGE', 'WHY'], changes.map((c) => [c.at.slice(0, 19).replace('T', ' '), c.task_id, c.kind, c.why.replace(/\s+/g, ' ')]), ctx.style)
      : `no recorded changes to ${inert(path)}`;
    return { data: { path, changes }, text };
  },
};
