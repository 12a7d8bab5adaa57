/* shadowcode approvals list: the same list as `approvals`, under the name other groups use. */
import { command as approvals } from './approvals.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  ...approvals,
  name: 'approvals list',
  summary: 'List pending approvals (the same as approvals)',
  examples: ['shadowcode --project ~/src/app approvals list'],
};
