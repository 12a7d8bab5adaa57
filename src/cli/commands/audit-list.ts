/*
 * shadowcode audit list: the audit log, newest first, a page at a time.
 *
 *   options ─► AuditQuery (the selected project, --since as a time) ─► ops/audit listAuditRows
 *   ─► a table (decisions: verdict, action, who, project, the rules) | --json: the rows as the chain verifies them
 */
import { type AuditQuery, listAuditRows, sinceOf } from '../../ops/audit.js';
import type { ChainRow } from '../../store/audit-read.js';
import type { CommandSpec } from '../spec.js';
import { table } from '../style.js';

interface DecisionBody {
  action?: string;
  allow?: boolean;
  reasons?: string[];
  principal?: { owner?: string };
  project?: string | null;
}

/** One line of a row that is not a decision: its plain fields, briefly (the decision it follows is in audit show). */
function gist(r: ChainRow): string {
  const b = (r.body ?? {}) as Record<string, unknown>;
  const text = Object.entries(b)
    .filter(([k, v]) => k !== 'decision_id' && k !== 'project' && v !== null && typeof v !== 'object')
    .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`)
    .join(' ');
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

export const command: CommandSpec = {
  name: 'audit list',
  summary: 'List the audit log, newest first: decisions (who, what, verdict, rules) and what followed them',
  description:
    "List the profile's audit log, newest first, a page at a time: each gate decision with its verdict, action, who asked (the owner), the project and the rules that decided, and the rows that followed a decision (a process started, an HTTP outcome, a grant's outcome). With a project selected (--project DIR) only that project's decisions; --decision, --action, --owner and --since narrow further. --json gives the rows as the chain verifies them (seq, at, kind, body, prev, hash). See one in full with shadowcode audit show ID, and why a decision was made with shadowcode policy explain --decision ID.",
  options: [
    { name: 'decision', type: 'string', value: 'VERDICT', choices: ['allow', 'deny'], description: 'only decisions that allowed, or that denied' },
    { name: 'action', type: 'string', value: 'PATTERN', description: 'only decisions on this action, or a family ending in * (tool:*, cli:approvals.*)' },
    { name: 'owner', type: 'string', value: 'OWNER', description: 'only decisions asked by this owner, or owners starting so when it ends in * (stdio:*)' },
    { name: 'since', type: 'string', value: 'WHEN', description: 'only rows since a span back from now (30m, 12h, 7d), a date (2026-12-07) or a date and time' },
    { name: 'limit', type: 'string', value: 'N', description: 'rows on a page (default 50, at most 1000)' },
    { name: 'cursor', type: 'string', value: 'CURSOR', description: 'the next_cursor of an earlier page, with the same filters' },
  ],
  args: [],
  examples: ['shadowcode audit list --decision deny --since 1d', 'shadowcode --project ~/src/app audit list --action "tool:*"', 'shadowcode --json audit list --decision deny --limit 10'],
  workspace: 'optional',
  async run(ctx, { options }) {
    const l = ctx.policy().limits.cli;
    const q: AuditQuery = {
      ...(options.decision ? { decision: options.decision as 'allow' | 'deny' } : {}),
      ...(typeof options.action === 'string' ? { action: options.action } : {}),
      ...(typeof options.owner === 'string' ? { owner: options.owner } : {}),
      ...(typeof options.since === 'string' ? { since: sinceOf(options.since) } : {}),
      ...(ctx.workspace !== undefined ? { project: ctx.workspace } : {}),
      ...(typeof options.limit === 'string' ? { limit: /^\d{1,9}$/.test(options.limit) ? Number(options.limit) : Number.NaN } : {}),
      ...(typeof options.cursor === 'string' ? { cursor: options.cursor } : {}),
    };
    const { action: _a, ...caller } = ctx.request('cli:audit.read');
    const page = await listAuditRows(ctx.gate(), caller, q, { rows: l.audit_list_rows, max: l.audit_page_size });
    const cells = page.rows.map((r) => {
      const b = r.body as DecisionBody;
      if (r.kind !== 'decision') return [String(r.seq), r.at.slice(0, 19).replace('T', ' '), r.kind, gist(r), '', typeof b.project === 'string' ? b.project : '', ''];
      return [String(r.seq), r.at.slice(0, 19).replace('T', ' '), b.allow ? 'allow' : ctx.style.bad('deny'), b.action ?? '', b.principal?.owner ?? '', b.project ?? '', (b.reasons ?? []).join(', ')];
    });
    const next = page.next_cursor ? `\nmore: shadowcode${ctx.workspace ? ` --project ${ctx.workspace}` : ''} audit list${rebuilt(options)} --cursor ${page.next_cursor}` : '';
    const text = page.rows.length ? `${table(['ROW', 'AT (UTC)', 'DECISION', 'ACTION', 'OWNER', 'PROJECT', 'RULES'], cells, ctx.style)}${next}` : 'no audit rows match';
    return { data: page, text };
  },
};

/** The filters again, for the next page's command line. */
function rebuilt(options: Record<string, unknown>): string {
  return ['decision', 'action', 'owner', 'since', 'limit']
    .filter((k) => typeof options[k] === 'string')
    .map((k) => ` --${k} ${/^[\w.:*@/-]+$/.test(options[k] as string) && !(options[k] as string).includes('*') ? options[k] : JSON.stringify(options[k])}`)
    .join('');
}
