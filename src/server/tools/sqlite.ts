/* shadow_sqlite: tables of, or one bounded read-only query on, a project database. */
import { runSqlite } from '../../engine/sqlite-query.js';
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
    return runSqlite(ticket, conn.project, a, conn.engine.policy.limits.inspection);
  },
};
