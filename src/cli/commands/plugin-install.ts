/* shadowcode plugin install DIR: namespaced definitions plugin:NAME/SERVER, inert until enabled. */
import { join, resolve } from 'node:path';
import type { Plugin } from '../../../gen/types/plugin.js';
import { definitionWarnings, type Normalized, normalize, parseText } from '../../catalog/definition.js';
import { installPlugin } from '../../catalog/store.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { readUserFile } from '../../util/safe-read.js';
import { check } from '../../schema/validate.js';
import type { CommandSpec } from '../spec.js';
import { inert } from '../../util/inert-text.js';

const MANIFESTS = ['shadowcode-plugin.json', 'shadowcode-plugin.yaml', 'shadowcode-plugin.yml'];

export const command: CommandSpec = {
  name: 'plugin install',
  summary: 'Install a plugin\'s MCP definitions (inert until enabled)',
  description: 'Read DIR/shadowcode-plugin.json (or .yaml) and store its servers as plugin:NAME/SERVER. Plugin definitions must pass credentials by reference (env_refs, api_key_env): literal env values are refused. Reinstalling replaces them; a changed one makes its grants stale.',
  options: [],
  args: [{ name: 'DIR', required: true, description: 'the plugin directory' }],
  examples: ['shadowcode plugin install ./my-plugin'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const dir = resolve(ctx.io.cwd, args[0] as string);
    const limits = ctx.policy().limits.definitions;
    const found = MANIFESTS.map((m) => {
      try {
        return { m, text: readUserFile(join(dir, m), { cap: limits.file_bytes, kind: 'plugin manifest' }).bytes.toString('utf8') };
      } catch (err) {
        if (err instanceof ScError && err.code === 'SC_FILE_NOT_FOUND') return undefined;
        throw err;
      }
    }).find(Boolean);
    if (!found) throw new ScError('SC_PLUGIN_INVALID', `${args[0]} has no ${MANIFESTS.join(', ')}`);
    const manifest = check<Plugin>('plugin', parseText(found.text, found.m, limits), 'SC_PLUGIN_INVALID', found.m);
    const servers: Normalized[] = manifest.servers.map((s, i) => {
      if (s && typeof s === 'object' && 'env' in s) throw new ScError('SC_PLUGIN_INVALID', `${found.m} at /servers/${i}: plugins pass credentials by reference only; use env_refs instead of env`);
      return normalize(s, `${found.m} /servers/${i}`, limits);
    });
    const names = servers.map((s) => s.name);
    if (new Set(names).size !== names.length) throw new ScError('SC_PLUGIN_INVALID', `${found.m}: server names must be unique`);
    const r = await enforce(ctx.gate(), ctx.request('cli:plugin.install', { args: { name: manifest.name, version: manifest.version } }), (t) => installPlugin(t, ctx.db(), manifest.name, manifest.version, servers));
    const warnings = servers.flatMap((s) => definitionWarnings(s).map((w) => `plugin:${manifest.name}/${s.name}: ${w}`));
    if (!ctx.json) for (const w of warnings) ctx.io.stderr.write(`shadowcode: warning: ${inert(w)}\n`);
    return { data: { plugin: manifest.name, version: manifest.version, definitions: r, warnings }, text: [`installed ${inert(manifest.name)} ${inert(manifest.version)}`, ...r.map((d) => `  ${inert(d.id)}  hash ${d.hash}`)].join('\n') };
  },
};
