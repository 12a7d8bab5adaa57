/* shadowcode plugin list: installed plugins and the server definitions each one brought. */
import { listPlugins } from '../../ops/plugins.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

export const command: CommandSpec = {
  name: 'plugin list',
  summary: 'List installed plugins and their server definitions',
  options: [],
  args: [],
  examples: ['shadowcode plugin list', 'shadowcode --json plugin list'],
  workspace: 'ignored',
  async run(ctx) {
    const plugins = listPlugins(ctx.ops);
    const text = plugins.length ? table(['PLUGIN', 'DEFINITIONS'], plugins.map((p) => [p.name, p.definitions.join(', ')]), ctx.style) : 'no plugins installed';
    return { data: { plugins }, text };
  },
};
