/* shadowcode audit verify: recompute the audit hash chain (ops/audit.ts verifyChain). Exit 4 when it is broken. */
import { EXIT } from '../../errors.js';
import { verifyChain } from '../../ops/audit.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'audit verify',
  summary: 'Check the audit log hash chain and report the first break',
  description: 'Recompute every audit row hash from the first row on. Exits 0 when the chain holds and 4 at the first row that was changed, removed or reordered.',
  options: [],
  args: [],
  examples: ['shadowcode audit verify', 'shadowcode --json audit verify'],
  workspace: 'ignored',
  async run(ctx) {
    const report = verifyChain(ctx.ops);
    const text = report.ok
      ? `audit chain intact: ${report.rows} rows, head ${report.head ?? '(empty)'}`
      : `audit chain BROKEN at row ${report.first_break?.seq} (${report.first_break?.reason}); ${report.rows - 1} rows before it verify [SC_AUDIT_BROKEN]`;
    return { data: report, text, exitCode: report.ok ? EXIT.ok : EXIT.integrity };
  },
};
