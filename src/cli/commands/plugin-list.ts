/* shadowcode plugin list: installed plugins and the server definitions each one brought. */
import { storedDefinitions } from '../../catalog/store.js';
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
    const byPlugin = new Map<string, string[]>();
    for (const d of storedDefinitions(ctx.db())) {
      if (d.source !== 'plugin' || d.plugin === null) continue;
      byPlugin.set(d.plugin, [...(byPlugin.get(d.plugin) ?? []), d.id]);
    }
    const plugins = [...byPlugin].map(([name, definitions]) => ({ name, definitions }));
    const text = plugins.length ? table(['PLUGIN', 'DEFINITIONS'], plugins.map((p) => [p.name, p.definitions.join(', ')]), ctx.style) : 'no plugins installed';
    return { data: { plugins }, text };
  },
};
