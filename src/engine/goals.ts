/*
 * Durable goals of one project: create, list, inspect, advance, abandon. Nothing
 * here starts an agent. Every query names the project, so a goal of another
 * project is simply not found.
 */
import { ScError } from '../errors.js';
import { type Db, sql } from '../store/db.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { decodeCursor, encodeCursor, type Page } from '../util/cursor.js';
import { newId } from '../util/ids.js';

export type GoalState = 'open' | 'done' | 'abandoned';
export interface Goal {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly state: GoalState;
  readonly created_at: string;
  readonly updated_at: string;
}
export interface GoalStep {
  readonly at: string;
  readonly kind: 'advance' | 'complete' | 'abandon';
  readonly note: string;
}

export function goalProject(db: Db, id: string): string | undefined {
  return (sql(db, 'SELECT project FROM goals WHERE id = ?').get(id) as { project: string } | undefined)?.project;
}

export function getGoal(db: Db, project: string, id: string): Goal & { steps: GoalStep[] } {
  const g = sql(db, 'SELECT id, title, description, state, created_at, updated_at FROM goals WHERE id = ? AND project = ?').get(id, project) as Goal | undefined;
  if (!g) throw new ScError('SC_GOAL_NOT_FOUND', `no goal ${JSON.stringify(id)} in this project`);
  const steps = sql(db, 'SELECT at, kind, note FROM goal_steps WHERE goal_id = ? ORDER BY seq').all(id) as GoalStep[];
  return { ...g, steps };
}

export function listGoals(db: Db, project: string, opts: { state?: GoalState; limit: number; cursor?: string }): Page<Goal> {
  const after = opts.cursor ? decodeCursor(opts.cursor, 2) : undefined;
  const rows = sql(
      db,
      `SELECT id, title, description, state, created_at, updated_at FROM goals
       WHERE project = ? AND (? IS NULL OR state = ?) AND (? IS NULL OR (created_at, id) > (?, ?))
       ORDER BY created_at, id LIMIT ?`,
    )
    .all(project, opts.state ?? null, opts.state ?? null, after ? 1 : null, after?.[0] ?? null, after?.[1] ?? null, opts.limit + 1) as Goal[];
  const more = rows.length > opts.limit;
  const items = rows.slice(0, opts.limit);
  const last = items[items.length - 1];
  return { items, next_cursor: more && last ? encodeCursor([last.created_at, last.id]) : null };
}

export function createGoal(ticket: GateTicket, db: Db, project: string, title: string, description: string, maxPerProject: number): Goal {
  assertTicket(ticket, 'tool:shadow_goal.create');
  return db.transaction(() => {
    const n = (sql(db, 'SELECT count(*) AS n FROM goals WHERE project = ?').get(project) as { n: number }).n;
    if (n >= maxPerProject) throw new ScError('SC_LIMIT_REACHED', `this project already has ${maxPerProject} goals`);
    const now = new Date().toISOString();
    const id = newId('goal');
    sql(db, "INSERT INTO goals (id, project, title, description, state, created_at, updated_at) VALUES (?, ?, ?, ?, 'open', ?, ?)").run(id, project, title, description, now, now);
    return getGoal(db, project, id);
  }).immediate();
}

function step(db: Db, project: string, id: string, kind: GoalStep['kind'], note: string): Goal & { steps: GoalStep[] } {
  return db.transaction(() => {
    const g = getGoal(db, project, id);
    if (g.state !== 'open') throw new ScError('SC_GOAL_CLOSED', `goal ${id} is ${g.state}`);
    const now = new Date().toISOString();
    sql(db, 'INSERT INTO goal_steps (goal_id, at, kind, note) VALUES (?, ?, ?, ?)').run(id, now, kind, note);
    const state: GoalState = kind === 'complete' ? 'done' : kind === 'abandon' ? 'abandoned' : 'open';
    sql(db, 'UPDATE goals SET state = ?, updated_at = ? WHERE id = ? AND project = ?').run(state, now, id, project);
    return getGoal(db, project, id);
  }).immediate();
}

export function advanceGoal(ticket: GateTicket, db: Db, project: string, id: string, note: string, complete: boolean): Goal & { steps: GoalStep[] } {
  assertTicket(ticket, 'tool:shadow_goal.advance');
  return step(db, project, id, complete ? 'complete' : 'advance', note);
}

export function abandonGoal(ticket: GateTicket, db: Db, project: string, id: string, reason: string): Goal & { steps: GoalStep[] } {
  assertTicket(ticket, 'tool:shadow_goal.abandon');
  return step(db, project, id, 'abandon', reason);
}
