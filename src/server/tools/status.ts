/*
 * shadow_status: what this connection is attached to, and how far it may go.
 *
 *   run ─► project, connection, engine, versions, limits (read fresh each call)
 *       ─► sandbox: sandboxStatus(policy), kept per loaded policy and sandbox probe
 *
 * The sandbox's description depends only on the policy (frozen once loaded), the probe of
 * bwrap (cached per PATH by sandboxSupport) and this process's uid (which a server never
 * changes); built on every call it cost a getuid system call and the syscall filter's
 * description, on the path of every status answer.
 */
import { sandboxStatus, sandboxSupport } from '../../engine/spawn/index.js';
import type { Policy } from '../../policy/load.js';
import { PROTOCOL_REVISIONS, VERSION } from '../../version.js';
import { READ_ONLY, type ToolDef } from './types.js';

const described = new WeakMap<Policy, { readonly support: ReturnType<typeof sandboxSupport>; readonly status: ReturnType<typeof sandboxStatus> }>();

/** sandboxStatus(policy), made again only when the policy or the probe behind it (a new PATH) changes. */
function sandboxOf(policy: Policy): ReturnType<typeof sandboxStatus> {
  const support = sandboxSupport();
  const known = described.get(policy);
  if (known?.support === support) return known.status;
  const status = Object.freeze(sandboxStatus(policy));
  described.set(policy, { support, status });
  return status;
}

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
      sandbox: sandboxOf(conn.engine.policy),
      limits: conn.opts.transport === 'stdio' ? { stdio_server: l.stdio_server } : { http_server: l.http_server, stdio_server: l.stdio_server },
    };
  },
};
