/* shadowcode jobs list: the same list as `jobs`, under the name other groups use. */
import { command as jobs } from './jobs.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  ...jobs,
  name: 'jobs list',
  summary: "List the project's jobs (the same as jobs)",
  examples: ['shadowcode --project ~/src/app jobs list'],
};
