/* shadow_status: what this connection is attached to, and how far it may go. */
import { ceilingOf } from '../../policy/authorize.js';
import { getProject } from '../../store/projects.js';
import { PROTOCOL_REVISIONS, VERSION } from '../../version.js';
import { READ_ONLY, type ToolDef } from './types.js';

export const shadowStatus: ToolDef = {
  name: 'shadow_status',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_status',
  run(conn) {
    const p = getProject(conn.engine.db(), conn.project);
    const l = conn.engine.policy.limits;
    return {
      project: { path: p.path, trusted: p.trusted, level: p.level, trusted_at: p.trusted_at },
      connection: {
        transport: conn.opts.transport,
        owner: conn.owner,
        allow_write: conn.opts.allowWrite,
        allow_approvals: conn.opts.allowApprovals,
        ceiling: ceilingOf(conn.request('tool:shadow_status')),
      },
      engine: { mode: conn.engine.mode, profile: conn.engine.profileDir },
      versions: { shadowcode: VERSION, node: process.versions.node, protocols: [...PROTOCOL_REVISIONS] },
      policy_hash: conn.engine.policy.hash,
      limits: { stdio_server: l.stdio_server, http_server: l.http_server },
    };
  },
};
