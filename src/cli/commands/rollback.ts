/*
 * shadowcode rollback TASK: put back every file a task changed, all or
 * nothing, refused when a file changed since; the same rollback
 * shadow_rollback gives an MCP host, with the person at the terminal as the
 * authority.
 *
 *   ops rollbackPreview (what would be restored) ─► y/N at the terminal, or --yes
 *   ─► ops rollback (gate cli:rollback, resource: the task) ─► restored files
 */
import { ScError } from '../../errors.js';
import { rollback, rollbackPreview } from '../../ops/history.js';
import { ask } from '../ask.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'rollback',
  summary: 'Undo a task: restore every file it changed (asks y/N, or --yes)',
  description:
    'Restore every file a task changed in the selected project to its state before the task, all or nothing. Refused with SC_ROLLBACK_CONFLICT, changing nothing, when a file was changed again since. Lists the files and asks y/N; without a terminal, --yes is required. See the change first with shadowcode review TASK.',
  options: [{ name: 'yes', type: 'boolean', description: 'do not ask; roll back at once' }],
  args: [{ name: 'TASK', required: true, description: 'the task id (job_…)' }],
  examples: ['shadowcode --project ~/src/app rollback job_0mh3k2x1a000f3c9d2e7b1', 'shadowcode --project ~/src/app --json rollback --yes job_0mh3k2x1a000f3c9d2e7b1'],
  workspace: 'required',
  async run(ctx, { args, options }) {
    const project = ctx.requireWorkspace('rollback');
    const id = args[0] as string;
    if (options.yes !== true) {
      if (!ctx.io.stdin.isTTY) throw new ScError('SC_USAGE', `rollback asks for confirmation at a terminal; without one, add --yes (shadowcode --project ${project} rollback --yes ${id})`);
      const files = rollbackPreview(ctx.ops, id);
      if (files.length === 0) throw new ScError('SC_FILE_NOT_FOUND', `task ${id} changed no files`);
      const list = files.map((f) => `  ${f.status} ${inert(f.path)}`).join('\n');
      if (!(await ask(ctx, `Roll back task ${id}? These files go back to their state before it:\n${list}\nRoll back? [y/N] `))) {
        return { data: { task_id: id, restored: [], declined: true }, text: 'nothing was rolled back', exitCode: 1 };
      }
    }
    const done = await rollback(ctx.ops, id);
    const left = done.not_restored?.length ? `; not restored (its earlier content was not kept): ${done.not_restored.map((f) => inert(f.path)).join(', ')}` : '';
    return { data: done, text: `rolled back task ${id}: restored ${done.restored.map((p) => inert(p)).join(', ') || 'nothing'}${left}` };
  },
};
