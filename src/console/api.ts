/*
 * What the page can ask and do, each answered by the operation (src/ops) that the CLI
 * command of the same name calls, with the console's context (the CLI user's authority,
 * the console as channel: audit rows name owner `console`).
 *
 *   GET  job       a job's events (its steps, commands, output, answer)
 *   GET  review    ops review            GET why   ops why
 *   GET  catalog   ops showCatalog + showPin for each granted definition
 *   GET  audit     the log, paged and filtered by kind, with ops verifyChain
 *   POST decide    ops decide, only for the digest the page showed
 *   POST rollback  ops rollback
 *   POST accept    ops acceptPin
 *   POST cancel    ops cancelJob
 *
 * The answers are what `--json` of those commands prints. Nothing here changes trust,
 * grants or policy.
 */
import { getApproval } from '../engine/approvals.js';
import { getJob, jobEvents } from '../engine/jobs.js';
import { ScError } from '../errors.js';
import { decide } from '../ops/approvals.js';
import { verifyChain } from '../ops/audit.js';
import { acceptPin, showCatalog, showPin } from '../ops/catalog.js';
import type { OpsContext } from '../ops/context.js';
import { review, rollback, why } from '../ops/history.js';
import { cancelJob } from '../ops/jobs.js';
import { enforce } from '../policy/gate.js';
import { readAudit } from '../store/audit.js';
import { approvalDigest } from './digest.js';
import { trustedProjects } from './state.js';

export interface Api {
  /** The context of one trusted project (the console's, made once). */
  project(path: unknown): OpsContext;
  /** The profile's context, with no project. */
  readonly profile: OpsContext;
  readonly auditPage: number;
  readonly eventPage: number;
}

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
      if (!job || job.project !== ctx.project) throw new ScError('SC_JOB_NOT_FOUND', `no job ${JSON.stringify(id)} in ${ctx.project}`);
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
      return review(api.project(q.get('project')), str(q.get('task'), 'task'));
    case 'why':
      return why(api.project(q.get('project')), { path: str(q.get('path'), 'path') });
    case 'catalog': {
      const ctx = api.project(q.get('project'));
      const view = showCatalog(ctx);
      const pins: Record<string, unknown> = {};
      for (const d of view.definitions) if (d.grant.catalog) pins[d.id] = showPin(ctx, d.id);
      return { view, pins };
    }
    case 'audit': {
      const ctx = api.profile;
      const after = Number(q.get('after') ?? 0);
      const kind = q.get('kind');
      const rows = await enforce(ctx.gate, ctx.request('cli:audit.read', { args: { after: Number.isInteger(after) ? after : 0, kind: kind ?? '' } }), () =>
        readAudit(ctx.db(), { afterSeq: Number.isInteger(after) && after > 0 ? after : 0, limit: api.auditPage, ...(kind ? { kinds: [kind] } : {}) }),
      );
      return { rows, next_after: rows.length === api.auditPage ? rows[rows.length - 1]?.seq : null, verify: verifyChain(ctx) };
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
      return decide(api.project(job.project), { approvalId: id, decision: decision === 'approve' ? 'approved' : 'denied' });
    }
    case 'rollback':
      return rollback(api.project(body.project), str(body.task, 'task'));
    case 'cancel': {
      // As `jobs cancel --json` says it: the job and whether it ended.
      const { job, ended } = await cancelJob(api.project(body.project), str(body.id, 'id'));
      return { job, ended };
    }
    case 'accept': {
      return acceptPin(api.project(body.project), str(body.id, 'id'), str(body.hash, 'hash'));
    }
    default:
      throw new ScError('SC_BAD_VALUE', `no console action ${route}`);
  }
}
