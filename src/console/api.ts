/*
 * What the page can ask and do, each answered by the CLI command that does it at the
 * terminal, run for its data with the console's Ctx (the CLI user's authority, the
 * console as channel: audit rows name owner `console`).
 *
 *   GET  job       a job's events (its steps, commands, output, answer)
 *   GET  review    `review TASK`        GET why   `why PATH`
 *   GET  catalog   `mcp` + `mcp tools ID` for each granted definition
 *   GET  audit     the log, paged and filtered by kind, with `audit verify`
 *   POST decide    `approvals approve|deny ID`, only for the digest the page showed
 *   POST rollback  `rollback --yes TASK`
 *   POST accept    `mcp tools ID --accept HASH`
 *
 * Nothing here changes trust, grants or policy.
 */
import type { CatalogView } from '../../gen/types/catalog-view.js';
import { command as auditVerifyCommand } from '../cli/commands/audit-verify.js';
import { decide as decideCommand } from '../cli/commands/decide.js';
import { command as catalogCommand } from '../cli/commands/mcp.js';
import { command as toolsCommand } from '../cli/commands/mcp-tools.js';
import { command as reviewCommand } from '../cli/commands/review.js';
import { command as rollbackCommand } from '../cli/commands/rollback.js';
import { command as whyCommand } from '../cli/commands/why.js';
import type { Ctx } from '../cli/context.js';
import type { Input, Output } from '../cli/spec.js';
import { getApproval } from '../engine/approvals.js';
import { getJob, jobEvents } from '../engine/jobs.js';
import { ScError } from '../errors.js';
import { enforce } from '../policy/gate.js';
import { readAudit } from '../store/audit.js';
import { approvalDigest } from './digest.js';
import { trustedProjects } from './state.js';

export interface Api {
  /** The Ctx of one trusted project (the console's, made once). */
  project(path: unknown): Ctx;
  /** The profile's Ctx, with no project. */
  readonly profile: Ctx;
  readonly auditPage: number;
  readonly eventPage: number;
}

type Spec = { run(ctx: Ctx, input: Input): Promise<Output> };
const run = async (spec: Spec, ctx: Ctx, args: string[] = [], options: Input['options'] = {}) => (await spec.run(ctx, { args, options })).data;

const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string' || v === '' || v.length > 4096) throw new ScError('SC_BAD_VALUE', `${what} must be a non-empty string`);
  return v;
};

export async function get(api: Api, route: string, q: URLSearchParams): Promise<unknown> {
  switch (route) {
    case 'job': {
      const ctx = api.project(q.get('project'));
      const id = str(q.get('id'), 'id');
      const job = getJob(ctx.db(), id);
      if (!job || job.project !== ctx.workspace) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)} in ${ctx.workspace}`);
      const events = [];
      let cursor: string | undefined;
      do {
        const page = jobEvents(ctx.db(), id, { limit: api.eventPage, ...(cursor ? { cursor } : {}) });
        events.push(...page.items);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return { job, events };
    }
    case 'review':
      return run(reviewCommand, api.project(q.get('project')), [str(q.get('task'), 'task')]);
    case 'why':
      return run(whyCommand, api.project(q.get('project')), [str(q.get('path'), 'path')]);
    case 'catalog': {
      const ctx = api.project(q.get('project'));
      const view = (await run(catalogCommand, ctx)) as CatalogView;
      const pins: Record<string, unknown> = {};
      for (const d of view.definitions) if (d.grant.catalog) pins[d.id] = await run(toolsCommand, ctx, [d.id]);
      return { view, pins };
    }
    case 'audit': {
      const ctx = api.profile;
      const after = Number(q.get('after') ?? 0);
      const kind = q.get('kind');
      const rows = await enforce(ctx.gate(), ctx.request('cli:audit.read', { args: { after: Number.isInteger(after) ? after : 0, kind: kind ?? '' } }), () =>
        readAudit(ctx.db(), { afterSeq: Number.isInteger(after) && after > 0 ? after : 0, limit: api.auditPage, ...(kind ? { kinds: [kind] } : {}) }),
      );
      return { rows, next_after: rows.length === api.auditPage ? rows[rows.length - 1]?.seq : null, verify: await run(auditVerifyCommand, ctx) };
    }
    default:
      throw new ScError('SC_BAD_VALUE', `no console route ${route}`);
  }
}

export async function post(api: Api, route: string, body: Record<string, unknown>): Promise<unknown> {
  switch (route) {
    case 'decide': {
      const id = str(body.id, 'id');
      const decision = body.decision;
      if (decision !== 'approve' && decision !== 'deny') throw new ScError('SC_BAD_VALUE', 'decision must be "approve" or "deny"');
      const digest = str(body.digest, 'digest');
      const db = api.profile.db();
      const a = getApproval(db, id);
      const job = a ? getJob(db, a.job_id) : undefined;
      if (!a || !job || !trustedProjects(db).includes(job.project)) throw new ScError('SC_APPROVAL_NOT_FOUND', `no approval ${JSON.stringify(id)} in a trusted project`);
      // INVARIANT: a decision is taken only on the content the person saw.
      if (approvalDigest(a) !== digest) throw new ScError('SC_APPROVAL_CHANGED', `approval ${id} is not the one the page showed; it was shown again as it is now`);
      return (await decideCommand(api.project(job.project), id, decision === 'approve' ? 'approved' : 'denied')).data;
    }
    case 'rollback':
      return run(rollbackCommand, api.project(body.project), [str(body.task, 'task')], { yes: true });
    case 'accept': {
      return run(toolsCommand, api.project(body.project), [str(body.id, 'id')], { accept: str(body.hash, 'hash') });
    }
    default:
      throw new ScError('SC_BAD_VALUE', `no console action ${route}`);
  }
}
