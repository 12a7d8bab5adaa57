/* shadowcode secret list: names and dates only, and the definitions whose literal env values are stored (names only; ops/secrets.ts). */
import { listSecrets } from '../../ops/secrets.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

export const command: CommandSpec = {
  name: 'secret list',
  summary: 'List stored secret names and dates (never values)',
  options: [],
  args: [],
  examples: ['shadowcode secret list', 'shadowcode --json secret list'],
  workspace: 'ignored',
  async run(ctx) {
    // Literal env values that mcp add moved out of a definition are stored here too: list them by name.
    const { secrets, definition_env: definitionEnv } = listSecrets(ctx.ops);
    const parts = [];
    if (secrets.length) parts.push(table(['NAME', 'CREATED', 'UPDATED'], secrets.map((s) => [s.name, s.created_at, s.updated_at]), ctx.style));
    if (definitionEnv.length) parts.push(table(['DEFINITION', 'ENV VALUES STORED'], definitionEnv.map((d) => [d.definition, d.names.join(', ')]), ctx.style));
    return { data: { secrets, definition_env: definitionEnv }, text: parts.length ? parts.join('\n\n') : 'no secrets stored' };
  },
};
