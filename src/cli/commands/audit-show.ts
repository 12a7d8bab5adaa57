/*
 * shadowcode audit show ID: one audit row in full, by decision id or row number.
 *
 *   ID ─► ops/audit showAudit ─► the row (its body as recorded, already redacted), a decision's rules
 *   in words, and the rows that followed the same decision
 */
import { showAudit } from '../../ops/audit.js';
import type { CommandSpec } from '../spec.js';

const indent = (text: string) => text.split('\n').map((l) => `  ${l}`).join('\n');

export const command: CommandSpec = {
  name: 'audit show',
  summary: 'Show one audit row in full: a decision with its request and rules, and what followed it',
  description:
    'Show one row of the audit log in full, by decision id (what a refusal names) or by row number (the ROW column of audit list): its time, kind, hash and recorded body, for a decision the rules that decided, and the rows that followed the same decision (a process started, an HTTP outcome). Secrets were masked when the row was written. shadowcode policy explain --decision ID says why, in the words of the policy.',
  options: [],
  args: [{ name: 'ID', required: true, description: 'a decision id, or a row number' }],
  examples: ['shadowcode audit show 0e803d4c-e30b-4454-b1ad-6e121258c7b9', 'shadowcode --json audit show 42'],
  workspace: 'ignored',
  async run(ctx, { args }) {
    const { action: _a, ...caller } = ctx.request('cli:audit.read');
    const v = await showAudit(ctx.gate(), caller, args[0] as string, ctx.policy().limits.cli.audit_list_rows);
    const b = v.row.body as { allow?: boolean; action?: string; decision_id?: string };
    const lines = [`row ${v.row.seq} at ${v.row.at}: ${v.row.kind}${v.row.kind === 'decision' ? ` ${b.allow ? 'ALLOW' : 'DENY'} ${b.action ?? ''}` : ''}`, `hash ${v.row.hash} (previous ${v.row.prev})`];
    if (v.rules) lines.push(...v.rules.map((r) => `  ${r.effect} ${r.id}: ${r.description}`));
    lines.push('body:', indent(JSON.stringify(v.row.body, null, 2)));
    if (v.related.length) lines.push('related rows:', ...v.related.map((r) => `  row ${r.seq} at ${r.at}: ${r.kind} ${JSON.stringify(r.body)}`));
    if (v.row.kind === 'decision' && b.decision_id) lines.push(`why: shadowcode policy explain --decision ${b.decision_id}`);
    return { data: v, text: lines.join('\n') };
  },
};
