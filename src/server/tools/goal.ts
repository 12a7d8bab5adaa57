/* shadow_goal: durable goals; nothing here starts an agent. */
import { abandonGoal, advanceGoal, createGoal, getGoal, goalProject, type GoalState, listGoals } from '../../engine/goals.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  action: 'create' | 'list' | 'get' | 'advance' | 'abandon';
  goal_id?: string;
  title?: string;
  description?: string;
  note?: string;
  complete?: boolean;
  state?: GoalState;
  limit?: number;
  cursor?: string;
}

export const shadowGoal: ToolDef<Args> = {
  name: 'shadow_goal',
  annotations: { ...READ_ONLY, readOnlyHint: false, idempotentHint: false },
  action: (a) => `tool:shadow_goal.${a.action}`,
  // The goal's own project (as stored) is checked by the same-project-only rule.
  resource: (conn, a) => (a.goal_id ? { kind: 'goal', id: a.goal_id, project: goalProject(conn.engine.db(), a.goal_id) ?? conn.project } : undefined),
  run(conn, a, ticket) {
    const db = conn.engine.db();
    const l = conn.engine.policy.limits.inspection;
    switch (a.action) {
      case 'create':
        return createGoal(ticket, db, conn.project, a.title as string, a.description ?? '', l.goals_per_project);
      case 'list': {
        const page = listGoals(db, conn.project, { limit: Math.min(a.limit ?? l.page_size_default, l.page_size_max), ...(a.state ? { state: a.state } : {}), ...(a.cursor ? { cursor: a.cursor } : {}) });
        return { goals: page.items, next_cursor: page.next_cursor };
      }
      case 'get':
        return getGoal(db, conn.project, a.goal_id as string);
      case 'advance':
        return advanceGoal(ticket, db, conn.project, a.goal_id as string, a.note as string, a.complete === true);
      case 'abandon':
        return abandonGoal(ticket, db, conn.project, a.goal_id as string, a.note as string);
    }
  },
};
