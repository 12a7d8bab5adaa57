/*
 * Which of the project's enabled MCP servers a coding CLI may reach, through our
 * relay, for one run.
 *
 *   grants of the project ─► definition still at the granted hash (targets.ts)
 *   ─► { name (the one native tasks use: mcp__<name>__<tool>), definition, hash }
 *   everything else: withheld, with why
 *
 * Nothing is shared when settings say mcp.share_with_cli_agents: false, or for
 * a read-only task (the native loop opens no external tools there either). The
 * CLI is never handed a server's command, URL or credentials: it gets our relay
 * (relay-host.ts), which calls the server through our client, after the same
 * exact approval a native task's call needs. So a server that uses stored
 * secrets can be shared too: they stay in this process.
 */
import type { Settings } from '../../../gen/types/settings.js';
import { grantsOf } from '../../catalog/store.js';
import { enabledTargets, type EnvSource } from '../../client/targets.js';
import type { Policy } from '../../policy/load.js';
import type { Db } from '../../store/db.js';

export interface SharedServer {
  /** The target's short name: letters, digits, `_` and `-`, unique in the run, as native tasks see it. */
  readonly name: string;
  readonly definition: string;
  readonly hash: string;
  readonly transport: 'stdio' | 'http';
}

export interface Withheld {
  readonly definition: string;
  readonly reason: string;
}

export interface ServerChoice {
  readonly shared: SharedServer[];
  readonly withheld: Withheld[];
}

export function serversForRun(db: Db, project: string, policy: Policy, secrets: EnvSource, settings: Settings | undefined, readOnly: boolean): ServerChoice {
  const grants = grantsOf(db, project);
  if (grants.length === 0) return { shared: [], withheld: [] };
  if (settings?.mcp?.share_with_cli_agents === false) return { shared: [], withheld: grants.map((g) => ({ definition: g.definition_id, reason: 'mcp.share_with_cli_agents is false' })) };
  if (readOnly) return { shared: [], withheld: grants.map((g) => ({ definition: g.definition_id, reason: 'a read-only task gets no external servers' })) };
  const targets = new Map(enabledTargets(db, project, policy, secrets).map((t) => [t.id, t]));
  const shared: SharedServer[] = [];
  const withheld: Withheld[] = [];
  for (const g of grants) {
    const t = targets.get(g.definition_id);
    if (!t) withheld.push({ definition: g.definition_id, reason: 'the definition is gone or changed since it was enabled' });
    else shared.push({ name: t.server, definition: t.id, hash: t.hash, transport: t.def.transport === 'http' ? 'http' : 'stdio' });
  }
  return { shared, withheld };
}
