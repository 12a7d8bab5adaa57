/*
 * shadowcode as a library: `import { open } from 'shadowcode'` or `require('shadowcode')`.
 *
 *   const sc = await open({ profile, project, onApproval })
 *   const gw = await sc.serveHttp({ token })      // or sc.serveStdio({ input, output })
 *   ... sc.status(), sc.approvals(), sc.decide(id, 'approve'), sc.review(taskId) ...
 *   await sc.close()                               // servers drain, owned jobs end
 *
 * Everything goes through the same gate, policy and limits as the CLI; see docs/library.md.
 */
export { open, Shadowcode, type JobEvent } from './shadowcode.js';
export type { Approval, ApprovalHandler, Decision, HttpServeOptions, OpenOptions, ServerHandle, StdioServeOptions } from './options.js';
export type { ApprovalRow, JobRow, JobState } from '../engine/job-types.js';
export type { Page } from '../util/cursor.js';
export type { Status } from '../../gen/types/status.js';
export type { CatalogView } from '../../gen/types/catalog-view.js';
export type { AuditReport } from '../../gen/types/audit-report.js';
export { ScError, ERRORS, EXIT, type ErrorCode } from '../errors.js';
export { VERSION as version } from '../version.js';
