/*
 * shadowcode review TASK: what a task changed, as a diff per file, with its
 * verification runs; the same review shadow_review gives an MCP host.
 *
 *   TASK ─► ops review (gate cli:review, resource: the task) ─► per file: status, path, diff | --json
 */
import { review as reviewTask } from '../../ops/history.js';
import type { CommandSpec } from '../spec.js';
import { inert, inertBlock } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'review',
  summary: 'Show what a task changed, as a diff per file',
  description: 'Show every file a task (shadowcode run, shadow_run) changed in the selected project as a unified diff from before the task to now, whatever changed it (its write tools, its approved commands and test runs, its background processes, a coding CLI), and the test runs that verified it. A test job id shows what that run changed. Task ids are listed by shadowcode jobs.',
  options: [],
  args: [{ name: 'TASK', required: true, description: 'the task id (job_…)' }],
  examples: ['shadowcode --project ~/src/app review job_0mh3k2x1a000f3c9d2e7b1', 'shadowcode --project ~/src/app --json review job_0mh3k2x1a000f3c9d2e7b1'],
  workspace: 'required',
  async run(ctx, { args }) {
    ctx.requireWorkspace('review');
    const id = args[0] as string;
    const review = await reviewTask(ctx.ops, id);
    // A file's name is one line and its diff keeps its lines: whatever the task wrote into either is shown, not obeyed.
    const parts = review.files.map((f) => `${ctx.style.bold(`${f.status} ${inert(f.path)}`)}\n${inertBlock(f.diff)}`);
    if (review.files.length === 0) parts.push(`task ${id} changed no files`);
    for (const v of review.verification) parts.push(`verified by ${inert(JSON.stringify(v.argv))}: ${v.state}${v.exit_code === null ? '' : ` (exit ${v.exit_code})`}`);
    if (review.rolled_back) parts.push(`task ${id} was rolled back`);
    return { data: review, text: parts.join('\n') };
  },
};
