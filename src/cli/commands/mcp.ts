/* shadowcode mcp: the audit view of external server definitions and this project's grants. */
import type { CatalogView } from '../../../gen/types/catalog-view.js';
import { catalogView } from '../../catalog/view.js';
import { check } from '../../schema/validate.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp',
  summary: 'Show external MCP server definitions and their grants for the project',
  description:
    'List every external MCP server definition (stored, from plugins, and the project\'s own files), its transport, executable or URL, argument count, env and credential variable names and hash, and its grant state for the selected project (enabled, disabled, stale or refused, and why). Also the enabled count against the cap and the grant history from the audit chain, with the chain\'s verification. No credential value is ever shown.',
  options: [],
  args: [],
  examples: ['shadowcode --workspace ~/src/app mcp', 'shadowcode --workspace ~/src/app --json mcp'],
  workspace: 'optional',
  async run(ctx) {
    const view = check<CatalogView>('catalog-view', catalogView(ctx.db(), ctx.workspace ?? null, ctx.policy()), 'SC_INTERNAL', 'catalog view');
    const rows = view.definitions.map((d) => {
      const target = d.transport === 'stdio' ? `${d.executable} (+${d.argument_count} args)` : d.transport === 'http' ? `${d.url}${d.needs_network ? ' [network]' : ''}` : '-';
      const names = [...(d.env_names ?? []).map((n) => `env:${n}`), ...(d.credential_names ?? []).map((n) => `ref:${n}`)].join(' ');
      return `${d.grant.state.padEnd(8)} ${d.id}\n         ${d.transport ?? 'invalid'} ${target}${names ? `  ${names}` : ''}\n         hash ${d.hash ?? '-'}${d.grant.reason ? `\n         ${d.grant.reason}` : ''}`;
    });
    const text = [
      view.project ? `project ${view.project}: ${view.enabled} of ${view.cap} servers enabled` : 'no project selected (use --workspace DIR to see grants)',
      ...(rows.length ? rows : ['no definitions']),
      ...(view.stale_grants ?? []).map((g) => { const s = g as { definition_id?: string; reason?: string }; return `stale    ${s.definition_id}: ${s.reason}`; }),
      `audit chain ${view.audit.ok ? 'intact' : `BROKEN at row ${view.audit.first_break}`} (${view.audit.rows} rows); ${view.history.length} grant changes recorded`,
    ].join('\n');
    return { data: view, text };
  },
};
