/* shadowcode approvals: the pending approvals of every owner's jobs in the project (ops/approvals.ts), as a table. */
import { listApprovals } from '../../ops/approvals.js';
import { approvalDetails, describeAction } from '../output.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

export const command: CommandSpec = {
  name: 'approvals',
  summary: 'List pending approvals of any job in the project',
  description: 'List the actions waiting for approval in the selected project, whichever connection owns their job. You are the authority: approve or deny any of them with approvals approve ID or approvals deny ID.',
  options: [],
  args: [],
  examples: ['shadowcode --project ~/src/app approvals', 'shadowcode --project ~/src/app --json approvals'],
  workspace: 'required',
  async run(ctx) {
    ctx.requireWorkspace('approvals');
    const approvals = listApprovals(ctx.ops);
    const text = approvals.length
      ? table(
          ['APPROVAL', 'JOB', 'OWNER', 'KIND', 'ACTION'],
          approvals.map((a) => [a.id, a.job_id, a.owner, a.kind, describeAction(a.kind, a.action)]),
          ctx.style,
        )
      : 'no pending approvals';
    // The table has one line per approval; what a person must read before deciding follows it.
    const details = approvals.map((a) => [a.id, approvalDetails(a.kind, a.action)] as const).filter(([, d]) => d !== '');
    return { data: { approvals }, text: details.length ? `${text}\n${details.map(([id, d]) => `\n${id}:\n${d}`).join('\n')}` : text };
  },
};
