/* shadow_sqlite: tables of, or one bounded read-only query on, a project database. */
import { runSqlite } from '../../engine/sqlite-query.js';
import { assertPathAllowed } from '../../policy/protected-paths.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  action: 'tables' | 'query';
  path: string;
  sql?: string;
  params?: unknown[] | Record<string, unknown>;
  max_rows?: number;
}

export const shadowSqlite: ToolDef<Args> = {
  name: 'shadow_sqlite',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_sqlite',
  run(conn, a, ticket) {
    const policy = conn.engine.policy;
    // The profile's own state.db (and anything else in it) is never read, even when it lies inside the project.
    const guard = (path: string) => void assertPathAllowed(policy, conn.project, path, 'read', conn.engine.profileDir);
    guard(a.path);
    return runSqlite(ticket, conn.project, a, policy.limits.inspection, { policy, db: conn.engine.db() }, guard);
  },
};
