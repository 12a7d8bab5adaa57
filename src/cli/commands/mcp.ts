/* shadowcode mcp: the audit view of external server definitions and this project's grants (ops/catalog.ts showCatalog), as a table. */
import { sandboxWords } from '../../catalog/definition.js';
import { showCatalog } from '../../ops/catalog.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';
import { inert } from '../../util/inert-text.js';

export const command: CommandSpec = {
  name: 'mcp',
  summary: "Show the external MCP servers delegated tasks may call, and their grants for the project",
  description:
    'List every external MCP server definition (stored, from plugins, and the project\'s own files), its transport, executable or URL, argument count, env and credential variable names and hash, and its grant state for the selected project (enabled, disabled, stale or refused, and why). Grants whose server\'s tool catalog changed since it was pinned are listed with the command to review them (shadowcode mcp tools ID). Also the enabled count against the cap and the grant history from the audit chain (changes that were applied are counted as changes; refused attempts are listed with their code and the hash they were about), with the chain\'s verification. No credential value is ever shown.',
  options: [],
  args: [],
  examples: ['shadowcode --project ~/src/app mcp', 'shadowcode --project ~/src/app --json mcp'],
  workspace: 'optional',
  async run(ctx) {
    const view = showCatalog(ctx.ops);
    const st = ctx.style;
    const rows = view.definitions.map((d) => {
      const target = d.transport === 'stdio' ? `${d.executable} (+${d.argument_count} args)` : d.transport === 'http' ? `${d.url}${d.needs_network ? ' [network]' : ''}` : '-';
      const names = [...(d.env_names ?? []).map((n) => `env:${n}`), ...(d.credential_names ?? []).map((n) => `ref:${n}`)].join(' ');
      return [st.state(d.grant.state), d.id, d.transport ?? 'invalid', target, names || '-', d.hash ?? '-'];
    });
    // A definition's id and a grant's reason can carry a server's or a file's text.
    const reasons = view.definitions.filter((d) => d.grant.reason).map((d) => `${st.state(d.grant.state)} ${inert(d.id)}: ${inert(String(d.grant.reason))}`);
    const sandboxes = view.definitions.filter((d) => d.sandbox).map((d) => `sandbox of ${inert(d.id)}: ${inert(sandboxWords(d.sandbox))}`);
    const catalogs = view.definitions
      .filter((d) => d.grant.catalog && !d.grant.catalog.last_match)
      .map((d) => `${st.bad('catalog changed')} ${inert(d.id)}: last seen ${d.grant.catalog?.last_hash}, pinned ${d.grant.catalog?.pinned_hash}; review it with shadowcode mcp tools ${inert(d.id)}`);
    const stale = (view.stale_grants ?? []).map((g) => {
      const s = g as { definition_id?: string; reason?: string };
      return `${st.state('stale')} ${inert(String(s.definition_id))}: ${inert(String(s.reason))}`;
    });
    const refusals = view.history.filter((h) => h.result === 'refused');
    const text = [
      view.project ? `project ${inert(view.project)}: ${view.enabled} of ${view.cap} servers enabled` : 'no project selected (use --project DIR to see grants)',
      rows.length ? table(['STATE', 'ID', 'TRANSPORT', 'TARGET', 'NAMES', 'HASH'], rows, st) : 'no definitions',
      ...reasons,
      ...sandboxes,
      ...catalogs,
      ...stale,
      `audit chain ${view.audit.ok ? st.state('intact') : st.bad(`BROKEN at row ${view.audit.first_break}`)} (${view.audit.rows} rows); ${view.changes} ${view.changes === 1 ? 'change' : 'changes'} to definitions and grants, ${view.refusals} refused`,
      ...(refusals.length
        ? ['refused attempts:', table(['SEQ', 'AT', 'ACTION', 'ID', 'CODE', 'HASH'], refusals.map((h) => [String(h.seq), h.at, h.action, h.id || '-', st.bad(h.code ?? '-'), h.hash ?? '-']), st)]
        : []),
    ].join('\n');
    return { data: view, text };
  },
};
