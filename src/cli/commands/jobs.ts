/*
 * shadowcode jobs: the project's tasks and jobs, whichever connection or
 * command owns them, newest first, with their state and answer.
 *
 *   --limit, --cursor ─► ops listJobPage (gate cli:jobs ─► every owner's jobs ─► each task's answer)
 *   ─► table | --json
 */
import { listJobPage } from '../../ops/jobs.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

const oneLine = (s: string, max: number) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export const command: CommandSpec = {
  name: 'jobs',
  summary: "List the project's jobs (tasks and test runs) of every owner, with state and answer",
  description:
    "List the selected project's jobs, whichever terminal, MCP connection or engine owns them, newest first: id, kind, state, owner and the answer a finished task gave. A job is a task (the model's or a coding CLI's work: shadowcode run, shadow_run; KIND task, kind agent in --json) or a test run (shadowcode test, shadow_test; KIND test); ids start job_ for both. Page on with --cursor. Look closer with shadowcode review TASK; undo with shadowcode rollback TASK.",
  options: [
    { name: 'limit', type: 'string', value: 'N', description: 'how many to show (default 20, at most 100)' },
    { name: 'cursor', type: 'string', value: 'CURSOR', description: 'the next_cursor of an earlier page' },
  ],
  args: [],
  examples: ['shadowcode --project ~/src/app jobs', 'shadowcode --project ~/src/app --json jobs --limit 100'],
  workspace: 'required',
  async run(ctx, { options }) {
    const project = ctx.requireWorkspace('jobs');
    const page = await listJobPage(ctx.ops, { ...(options.limit !== undefined ? { limit: Number(options.limit) } : {}), ...(typeof options.cursor === 'string' ? { cursor: options.cursor } : {}) });
    const jobs = page.jobs;
    const said = (j: (typeof jobs)[number]) => {
      if (j.kind === 'test') return j.exit_code === null ? JSON.stringify(j.argv) : `${JSON.stringify(j.argv)} exited ${j.exit_code}`;
      const a = j.answer;
      if (!a) return '';
      return oneLine(a.summary ?? (a.reason ? `${a.reason.code}: ${a.reason.message}` : ''), 80);
    };
    const text = jobs.length
      // A job is a task (the model's work; kind agent in --json) or a test run: the table says task.
      ? table(['JOB', 'KIND', 'STATE', 'OWNER', 'CREATED', 'ANSWER'], jobs.map((j) => [j.id, j.kind === 'agent' ? 'task' : j.kind, j.state, j.owner, j.created_at.slice(0, 19).replace('T', ' '), said(j)]), ctx.style) +
        (page.next_cursor ? `\nmore: shadowcode --project ${project} jobs --cursor ${page.next_cursor}` : '')
      : 'no tasks or jobs in this project';
    return { data: { jobs, next_cursor: page.next_cursor }, text };
  },
};
