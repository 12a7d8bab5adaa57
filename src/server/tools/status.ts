/* shadow_status: what this connection is attached to, and how far it may go. */
import { sandboxStatus } from '../../engine/spawn/index.js';
import { PROTOCOL_REVISIONS, VERSION } from '../../version.js';
import { READ_ONLY, type ToolDef } from './types.js';

export const shadowStatus: ToolDef = {
  name: 'shadow_status',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_status',
  run(conn, _args, ticket, _signal, req) {
    const l = conn.engine.policy.limits;
    return {
      project: req.project,
      connection: {
        transport: conn.opts.transport,
        owner: conn.owner,
        allow_write: conn.opts.allowWrite,
        allow_approvals: conn.opts.allowApprovals,
        ceiling: ticket.ceiling,
      },
      engine: { mode: conn.engine.mode, profile: conn.engine.profileDir, pid: conn.engine.sharedPid, ...(conn.engine.lostShared ? { lost_shared: conn.engine.lostShared } : {}) },
      versions: { shadowcode: VERSION, node: process.versions.node, protocols: [...PROTOCOL_REVISIONS] },
      policy_hash: conn.engine.policy.hash,
      sandbox: sandboxStatus(conn.engine.policy),
      limits: conn.opts.transport === 'stdio' ? { stdio_server: l.stdio_server } : { http_server: l.http_server, stdio_server: l.stdio_server },
    };
  },
};
