/*
 * External MCP server definitions and their grants as operations: store one, remove one,
 * grant one to the selected (trusted) project pinned by its hash, withdraw the grant.
 *
 *   addServer(ops, {file, hash?})     ─► the file read within the definition cap (a FIFO or a
 *                                        device is refused, not waited on) ─► validated
 *                                        ─► gate cli:mcp.add ─► stored as config:NAME, literal env
 *                                        values moved into the secret store
 *   removeServer(ops, {id, hash})     ─► gate cli:mcp.remove ─► the definition and every grant of it
 *   enableServer(ops, {id, hash})     ─► the project trusted, a project file's definition valid
 *                                        ─► gate cli:mcp.enable ─► grant stored at that hash
 *                                        ─► what its sandbox adds, and which of those paths are missing
 *   disableServer(ops, id)            ─► gate cli:mcp.disable ─► grant gone (none: a no-op, unless
 *                                        the id names no definition at all)
 *
 * Reading and pinning the granted server's tool catalog is ops/catalog.ts (refreshPin).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { definitionHash, definitionWarnings, type Normalized, normalize, parseText } from '../catalog/definition.js';
import { projectDefinitions } from '../catalog/project-files.js';
import { addDefinition, disableGrant, enableGrant, removeDefinition } from '../catalog/store.js';
import { currentHashes, grantStates } from '../catalog/view.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { getProject } from '../store/projects.js';
import { readUserFile } from '../util/safe-read.js';
import { nearest } from '../util/suggest.js';
import { type OpsContext, projectOf } from './context.js';

type Listed = ReturnType<typeof grantStates>['definitions'][number];

export interface AddServerInput {
  /** The definition file, absolute (a .json file is strict JSON, anything else YAML). */
  readonly file: string;
  /** How the caller named the file, for messages. */
  readonly shown?: string;
  /** The current hash of the definition it replaces; unset: it must be new (or identical). */
  readonly hash?: string;
}

export interface AddServerResult {
  readonly stored: ReturnType<typeof addDefinition>;
  readonly definition: Normalized;
  /** What is stored as written but deserves a look (a ${ kept literally). */
  readonly warnings: string[];
  /** The env names whose literal values moved into the profile's secret store. */
  readonly env_moved_to_secrets: string[];
}

export interface EnableServerResult {
  readonly grant: ReturnType<typeof enableGrant>;
  /** The definition as the grant sees it now. */
  readonly listed: Listed | undefined;
  /** Paths its sandbox key names that do not exist yet (not shown to it until created). */
  readonly missing: string[];
}

export async function addServer(ops: OpsContext, input: AddServerInput): Promise<AddServerResult> {
  const limits = ops.policy.limits.definitions;
  const shown = input.shown ?? input.file;
  const text = readUserFile(input.file, { cap: limits.file_bytes, kind: 'definition' }).bytes.toString('utf8');
  const def = normalize(parseText(text, shown, limits), shown, limits);
  const secrets = ops.secrets();
  const db = ops.db();
  const stored = await enforce(ops.gate, ops.request('cli:mcp.add', { args: { id: `config:${def.name}`, hash: definitionHash(def), replace: input.hash !== undefined } }), (t) => addDefinition(t, db, secrets, def, input.hash));
  return { stored, definition: def, warnings: definitionWarnings(def), env_moved_to_secrets: stored.unchanged ? [] : Object.keys(def.env).sort() };
}

export async function removeServer(ops: OpsContext, input: { readonly id: string; readonly hash: string }): Promise<ReturnType<typeof removeDefinition>> {
  const { id, hash } = input;
  const secrets = ops.secrets();
  const db = ops.db();
  return enforce(ops.gate, ops.request('cli:mcp.remove', { args: { id, hash } }), (t) => removeDefinition(t, db, secrets, id, hash));
}

export async function enableServer(ops: OpsContext, input: { readonly id: string; readonly hash: string }): Promise<EnableServerResult> {
  const project = projectOf(ops, 'mcp enable');
  const { id, hash } = input;
  const policy = ops.policy;
  const db = ops.db();
  if (!getProject(db, project).trusted) throw new ScError('SC_PROJECT_UNTRUSTED', `${project} is not trusted; run shadowcode --project ${project} trust first`);
  const refused = id.startsWith('project:') ? projectDefinitions(project, policy.limits.definitions).find((p) => p.id === id && !p.ok) : undefined;
  if (refused && !refused.ok) throw new ScError('SC_DEF_REFUSED', `${id} cannot be enabled: ${refused.error.message}`);
  const current = currentHashes(db, project, policy).get(id);
  const grant = await enforce(ops.gate, ops.request('cli:mcp.enable', { resource: { kind: 'definition', id, hash }, args: { id, hash } }), (t) =>
    enableGrant(t, db, project, id, hash, current, policy.limits.grants.enabled_servers_per_project),
  );
  const listed = grantStates(db, project, policy).definitions.find((d) => d.id === id);
  const home = ops.env.HOME;
  const missing = [...(listed?.sandbox?.read ?? []), ...(listed?.sandbox?.write ?? [])].filter((p) => {
    const abs = p.startsWith('~/') ? (home ? join(home, p.slice(2)) : null) : p;
    return abs !== null && !existsSync(abs);
  });
  return { grant, listed, missing };
}

export async function disableServer(ops: OpsContext, id: string): Promise<{ id: string; disabled: true; changed: boolean }> {
  const project = projectOf(ops, 'mcp disable');
  const db = ops.db();
  const removed = await enforce(ops.gate, ops.request('cli:mcp.disable', { args: { id } }), (t) => disableGrant(t, db, project, id));
  if (!removed) {
    // Not enabled is the state asked for, so it is a no-op; only an id that names nothing is an error.
    const known = grantStates(db, project, ops.policy).definitions.map((d) => d.id);
    if (!known.includes(id)) {
      const suggestion = nearest(id, known);
      throw new ScError('SC_DEF_NOT_FOUND', `no definition ${id}${suggestion ? `; did you mean ${suggestion}?` : ''} (see shadowcode mcp)`, { id });
    }
  }
  return { id, disabled: true, changed: removed };
}
