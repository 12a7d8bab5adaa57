/* shadow_sessions: this project's sessions, filtered before the page limit. */
import { listSessions } from '../../engine/sessions.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  limit?: number;
  cursor?: string;
}

export const shadowSessions: ToolDef<Args> = {
  name: 'shadow_sessions',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_sessions',
  run(conn, args) {
    const l = conn.engine.policy.limits.inspection;
    const page = listSessions(conn.engine.db(), conn.project, { limit: Math.min(args.limit ?? l.page_size_default, l.page_size_max), ...(args.cursor ? { cursor: args.cursor } : {}) });
    return { sessions: page.items, next_cursor: page.next_cursor };
  },
};
