/* shadow_why: the recorded change history of one project path (dead owners' tasks settled first). */
import { pathHistory } from '../../engine/history.js';
import { reapOrphans } from '../../engine/owners.js';
import { confinedPath } from '../../util/confine.js';
import { relative } from 'node:path';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  path: string;
  limit?: number;
}

export const shadowWhy: ToolDef<Args> = {
  name: 'shadow_why',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_why',
  run(conn, a) {
    const rel = relative(conn.project, confinedPath(conn.project, a.path, { mustExist: false }));
    const l = conn.engine.policy.limits.inspection;
    reapOrphans(conn.engine.db(), conn.engine.policy);
    return { path: rel, changes: pathHistory(conn.engine.db(), conn.project, rel, Math.min(a.limit ?? l.page_size_default, l.page_size_max)) };
  },
};
