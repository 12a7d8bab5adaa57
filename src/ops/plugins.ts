/*
 * Plugins as operations: a folder's manifest installed as namespaced definitions
 * (plugin:NAME/SERVER, inert until enabled), the installed ones listed, one removed.
 *
 *   installPlugin(ops, {dir, shown?}) ─► the folder's manifest (json, yaml or yml; read within the
 *                                        definition cap) ─► checked against schemas/plugin.schema.json,
 *                                        credentials by reference only, unique server names
 *                                        ─► gate cli:plugin.install ─► stored ─► {plugin, version, definitions, warnings}
 *   listPlugins(ops)                   ─► each plugin with its definition ids
 *   removePlugin(ops, name)            ─► gate cli:plugin.remove ─► its definitions and every grant of them
 */
import { join } from 'node:path';
import type { Plugin } from '../../gen/types/plugin.js';
import { definitionWarnings, type Normalized, normalize, parseText } from '../catalog/definition.js';
import { installPlugin as storePlugin, removePlugin as dropPlugin, storedDefinitions } from '../catalog/store.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { check } from '../schema/validate.js';
import { readUserFile } from '../util/safe-read.js';
import type { OpsContext } from './context.js';

const MANIFESTS = ['shadowcode-plugin.json', 'shadowcode-plugin.yaml', 'shadowcode-plugin.yml'];

export interface InstalledPlugin {
  readonly plugin: string;
  readonly version: string;
  readonly definitions: Array<{ id: string; hash: string }>;
  /** Per definition, what is stored as written but deserves a look. */
  readonly warnings: string[];
}

export async function installPlugin(ops: OpsContext, input: { readonly dir: string; readonly shown?: string }): Promise<InstalledPlugin> {
  const limits = ops.policy.limits.definitions;
  const found = MANIFESTS.map((m) => {
    try {
      return { m, text: readUserFile(join(input.dir, m), { cap: limits.file_bytes, kind: 'plugin manifest' }).bytes.toString('utf8') };
    } catch (err) {
      if (err instanceof ScError && err.code === 'SC_FILE_NOT_FOUND') return undefined;
      throw err;
    }
  }).find(Boolean);
  if (!found) throw new ScError('SC_PLUGIN_INVALID', `${input.shown ?? input.dir} has no ${MANIFESTS.join(', ')}`);
  const manifest = check<Plugin>('plugin', parseText(found.text, found.m, limits), 'SC_PLUGIN_INVALID', found.m);
  const servers: Normalized[] = manifest.servers.map((s, i) => {
    if (s && typeof s === 'object' && 'env' in s) throw new ScError('SC_PLUGIN_INVALID', `${found.m} at /servers/${i}: plugins pass credentials by reference only; use env_refs instead of env`);
    return normalize(s, `${found.m} /servers/${i}`, limits);
  });
  const names = servers.map((s) => s.name);
  if (new Set(names).size !== names.length) throw new ScError('SC_PLUGIN_INVALID', `${found.m}: server names must be unique`);
  const db = ops.db();
  const definitions = await enforce(ops.gate, ops.request('cli:plugin.install', { args: { name: manifest.name, version: manifest.version } }), (t) => storePlugin(t, db, manifest.name, manifest.version, servers));
  const warnings = servers.flatMap((s) => definitionWarnings(s).map((w) => `plugin:${manifest.name}/${s.name}: ${w}`));
  return { plugin: manifest.name, version: manifest.version, definitions, warnings };
}

export function listPlugins(ops: Pick<OpsContext, 'db'>): Array<{ name: string; definitions: string[] }> {
  const byPlugin = new Map<string, string[]>();
  for (const d of storedDefinitions(ops.db())) {
    if (d.source !== 'plugin' || d.plugin === null) continue;
    byPlugin.set(d.plugin, [...(byPlugin.get(d.plugin) ?? []), d.id]);
  }
  return [...byPlugin].map(([name, definitions]) => ({ name, definitions }));
}

export async function removePlugin(ops: OpsContext, name: string): Promise<{ plugin: string; removed: string[]; grants_removed: number }> {
  const db = ops.db();
  const r = await enforce(ops.gate, ops.request('cli:plugin.remove', { args: { name } }), (t) => dropPlugin(t, db, name));
  return { plugin: name, ...r };
}
