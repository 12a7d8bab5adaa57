/*
 * Which of the project's enabled MCP servers a coding CLI is given for one run.
 *
 *   grants of the project ─► definition still at the granted hash (the pin)
 *   ─► no stored secret, credential reference or literal env value
 *   ─► { name, stdio command | http url }      everything else: withheld, with why
 *
 * Nothing is shared when settings say mcp.share_with_cli_agents: false, or for
 * a read-only task (the native loop opens no external tools there either). The
 * CLI connects to these servers itself, under its own approval rules, so what
 * it is handed is only what the user granted here, and never a credential.
 */
import type { Settings } from '../../../gen/types/settings.js';
import type { Normalized } from '../../catalog/definition.js';
import { projectDefinitions } from '../../catalog/project-files.js';
import { grantsOf, storedDefinitions } from '../../catalog/store.js';
import type { Policy } from '../../policy/load.js';
import type { Db } from '../../store/db.js';

export interface SharedServer {
  /** A name the CLI accepts as a key: letters, digits, `_` and `-`, unique in the run. */
  readonly name: string;
  readonly definition: string;
  readonly hash: string;
  readonly transport: 'stdio' | 'http';
  readonly command?: string;
  readonly args?: string[];
  readonly url?: string;
}

export interface Withheld {
  readonly definition: string;
  readonly reason: string;
}

export interface ServerChoice {
  readonly shared: SharedServer[];
  readonly withheld: Withheld[];
}

type Body = Omit<Normalized, 'env'> & { env_names?: string[]; env?: Record<string, string> };

export function serversForRun(db: Db, project: string, policy: Policy, settings: Settings | undefined, readOnly: boolean): ServerChoice {
  const grants = grantsOf(db, project);
  if (grants.length === 0) return { shared: [], withheld: [] };
  if (settings?.mcp?.share_with_cli_agents === false) return { shared: [], withheld: grants.map((g) => ({ definition: g.definition_id, reason: 'mcp.share_with_cli_agents is false' })) };
  if (readOnly) return { shared: [], withheld: grants.map((g) => ({ definition: g.definition_id, reason: 'a read-only task gets no external servers' })) };
  const current = new Map<string, { body: Body; hash: string }>();
  for (const d of storedDefinitions(db)) current.set(d.id, { body: d.body, hash: d.hash });
  for (const p of projectDefinitions(project, policy.limits.definitions)) if (p.ok) current.set(p.id, { body: p.def, hash: p.hash });
  const shared: SharedServer[] = [];
  const withheld: Withheld[] = [];
  const names = new Set<string>();
  for (const g of grants) {
    const d = current.get(g.definition_id);
    const why = !d
      ? 'the definition no longer exists'
      : d.hash !== g.hash
        ? 'the definition changed since it was enabled'
        : Object.keys(d.body.env_refs ?? {}).length || d.body.api_key_env
          ? 'it uses stored secrets or credential variables'
          : (d.body.env_names ?? Object.keys(d.body.env ?? {})).length
            ? 'it sets literal environment values'
            : null;
    if (why || !d) {
      withheld.push({ definition: g.definition_id, reason: why ?? 'unknown' });
      continue;
    }
    let name = d.body.name.replace(/[^A-Za-z0-9_-]/g, '_');
    for (let i = 2; names.has(name); i++) name = `${d.body.name}_${i}`;
    names.add(name);
    const base = { name, definition: g.definition_id, hash: g.hash };
    if (d.body.transport === 'stdio' && d.body.command) shared.push({ ...base, transport: 'stdio', command: d.body.command[0] as string, args: d.body.command.slice(1) });
    else if (d.body.url) shared.push({ ...base, transport: 'http', url: d.body.url });
  }
  return { shared, withheld };
}
