/* shadowcode plugin install DIR: namespaced definitions plugin:NAME/SERVER, inert until enabled (ops/plugins.ts). */
import { resolve } from 'node:path';
import { installPlugin } from '../../ops/plugins.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'plugin install',
  summary: 'Install a plugin\'s MCP definitions (inert until enabled)',
  description: 'Read DIR/shadowcode-plugin.json (or .yaml) and store its servers as plugin:NAME/SERVER. Plugin definitions must pass credentials by reference (env_refs, api_key_env): literal env values are refused. Reinstalling replaces them; a changed one makes its grants stale.',
  options: [],
  args: [{ name: 'DIR', required: true, description: 'the plugin directory' }],
  examples: ['shadowcode plugin install ./my-plugin'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const { plugin, version, definitions: r, warnings } = await installPlugin(ctx.ops, { dir: resolve(ctx.io.cwd, args[0] as string), shown: args[0] as string });
    if (!ctx.json) for (const w of warnings) ctx.io.stderr.write(`shadowcode: warning: ${inert(w)}\n`);
    return { data: { plugin, version, definitions: r, warnings }, text: [`installed ${inert(plugin)} ${inert(version)}`, ...r.map((d) => `  ${inert(d.id)}  hash ${d.hash}`)].join('\n') };
  },
};
