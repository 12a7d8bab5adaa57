/*
 * What a caller would act on, and with which policy: the project and its trust, the
 * profile, its engine, versions, the policy hash, the sandbox and telemetry.
 *
 *   status(ops) ─► the project as stored (+ holds_home) ─► the shared engine, if one answers
 *   ─► versions, policy, sandboxStatus, telemetryStatus ─► checked against schemas/status.schema.json
 */
import type { Status } from '../../gen/types/status.js';
import { engineFiles } from '../engine/daemon/files.js';
import { sandboxStatus } from '../engine/spawn/index.js';
import { holdsHome } from '../policy/home.js';
import { check } from '../schema/validate.js';
import { getProject } from '../store/projects.js';
import { PROTOCOL_REVISIONS, VERSION } from '../version.js';
import type { OpsContext } from './context.js';
import { findShared } from './engine.js';
import { telemetryStatus } from './telemetry.js';

export type { Status };

export async function status(ops: OpsContext): Promise<Status> {
  const db = ops.db();
  const policy = ops.policy;
  const project = ops.project === undefined ? null : { ...getProject(db, ops.project), holds_home: holdsHome(ops.project, ops.homes) };
  const shared = await findShared(ops);
  return check<Status>(
    'status',
    {
      project,
      profile: { path: ops.profileDir },
      engine: { mode: shared ? 'shared' : 'temporary', pid: shared?.info.pid ?? null, socket: engineFiles(ops.profileDir).sock },
      versions: {
        shadowcode: VERSION,
        node: process.versions.node,
        sqlite: (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v,
        protocols: [...PROTOCOL_REVISIONS],
      },
      policy: { hash: policy.hash, rules: policy.permissions.rules.length },
      sandbox: sandboxStatus(policy),
      telemetry: telemetryStatus(ops),
    },
    'SC_INTERNAL',
    'status output',
  );
}
