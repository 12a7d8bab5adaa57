/* shadowcode approvals deny ID */
import type { CommandSpec } from '../spec.js';
import { decide } from './decide.js';

export const command: CommandSpec = {
  name: 'approvals deny',
  summary: 'Deny one pending action',
  description: 'Deny exactly one pending action of any job in the project; the job is cancelled without running it.',
  options: [],
  args: [{ name: 'ID', required: true, description: 'the approval id' }],
  examples: ['shadowcode --project ~/src/app approvals deny appr_0mh3k2x1a000f3c9d2e7b1'],
  workspace: 'required',
  run: (ctx, { args }) => decide(ctx, args[0] as string, 'denied'),
};
