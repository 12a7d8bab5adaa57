/*
 * shadowcode why PATH: the recorded history of one project file, newest
 * first: which task changed it, when, how and why; the same history
 * shadow_why gives an MCP host.
 *
 *   PATH confined to the project ─► gate cli:why ─► pathHistory ─► table | --json
 */
import { relative } from 'node:path';
import { pathHistory } from '../../engine/history.js';
import { enforce } from '../../policy/gate.js';
import { confinedPath } from '../../util/confine.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';
import { inert } from '../../util/inert-text.js';

interface Change {
  task_id: string;
  at: string;
  kind: string;
  why: string;
  task_title: string;
}

export const command: CommandSpec = {
  name: 'why',
  summary: "Show a file's recorded changes: which task, when and why",
  description: 'Show the changes shadowcode recorded for one file of the selected project, newest first: the task that made each (see shadowcode review TASK), when, whether it wrote, deleted or rolled back, and why. PATH is relative to the project, or an absolute path inside it.',
  options: [{ name: 'limit', type: 'string', value: 'N', description: 'how many changes to show (default 20, at most 100)' }],
  args: [{ name: 'PATH', required: true, description: 'a file of the project' }],
  examples: ['shadowcode --project ~/src/app why src/greet.js', 'shadowcode --project ~/src/app --json why src/greet.js'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('why');
    const path = relative(project, confinedPath(project, args[0] as string, { mustExist: false }));
    const l = ctx.policy().limits.inspection;
    const asked = options.limit === undefined ? l.page_size_default : Number(options.limit);
    const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, l.page_size_max) : l.page_size_default;
    const db = ctx.db();
    const changes = (await enforce(ctx.gate(), ctx.request('cli:why', { resource: { kind: 'file', id: path.slice(0, 512), project }, args: { path } }), () => pathHistory(db, project, path, limit))) as Change[];
    const text = changes.length
      ? table(['WHEN', 'TASK', 'CHANGE', 'WHY'], changes.map((c) => [c.at.slice(0, 19).replace('T', ' '), c.task_id, c.kind, c.why.replace(/\s+/g, ' ')]), ctx.style)
      : `no recorded changes to ${inert(path)}`;
    return { data: { path, changes }, text };
  },
};
