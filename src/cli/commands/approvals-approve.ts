/* shadowcode approvals approve ID */
import type { CommandSpec } from '../spec.js';
import { decide } from './decide.js';

export const command: CommandSpec = {
  name: 'approvals approve',
  summary: 'Approve one pending action',
  description: 'Approve exactly one pending action (shown by shadowcode approvals) of any job in the project. The job owning it then runs exactly that action.',
  options: [],
  args: [{ name: 'ID', required: true, description: 'the approval id' }],
  examples: ['shadowcode --project ~/src/app approvals approve appr_0mh3k2x1a000f3c9d2e7b1'],
  workspace: 'required',
  run: (ctx, { args }) => decide(ctx, args[0] as string, 'approved'),
};
