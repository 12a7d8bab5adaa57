/*
 * Resources: read-only JSON views of the fixed project. Each read goes through
 * the gate as `resource:<uri>`. shadow://plan is null until a plan is recorded.
 */
import { ScError } from '../errors.js';
import { readNote } from '../engine/memory.js';
import { listSessions } from '../engine/sessions.js';
import { enforce } from '../policy/gate.js';
import { sql } from '../store/db.js';
import { getProject } from '../store/projects.js';
import type { Connection } from './connection.js';

export interface ResourceDef {
  readonly uri: string;
  readonly name: string;
  readonly description: string;
  read(conn: Connection): unknown;
}

function latestPlan(conn: Connection): unknown {
  const row = sql(
    conn.engine.db(),
    `SELECT e.job_id, e.at, e.body FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.project = ? AND e.kind = 'plan' ORDER BY e.seq DESC LIMIT 1`,
  ).get(conn.project) as { job_id: string; at: string; body: string } | undefined;
  return row ? { job_id: row.job_id, recorded_at: row.at, plan: JSON.parse(row.body) as unknown } : null;
}

export const RESOURCES: readonly ResourceDef[] = [
  {
    uri: 'shadow://project',
    name: 'project',
    description: 'The fixed project: path, trust and trust level.',
    read: (conn) => {
      const p = getProject(conn.engine.db(), conn.project);
      return { path: p.path, trusted: p.trusted, level: p.level, trusted_at: p.trusted_at };
    },
  },
  {
    uri: 'shadow://sessions',
    name: 'sessions',
    description: "The newest sessions of this project (the first page of shadow_sessions).",
    read: (conn) => listSessions(conn.engine.db(), conn.project, { limit: conn.engine.policy.limits.inspection.page_size_default }).items,
  },
  {
    uri: 'shadow://memory',
    name: 'memory',
    description: "The project's note and its content hash.",
    read: (conn) => readNote(conn.engine.db(), conn.project, 'project'),
  },
  {
    uri: 'shadow://plan',
    name: 'plan',
    description: 'The most recently recorded plan of a task in this project, or null when none is recorded.',
    read: latestPlan,
  },
];

export async function readResource(conn: Connection, uri: string, signal?: AbortSignal): Promise<{ uri: string; mimeType: string; text: string }> {
  const def = RESOURCES.find((r) => r.uri === uri);
  if (!def) throw new ScError('SC_TOOL_UNKNOWN', `no resource ${JSON.stringify(uri.slice(0, 256))}`);
  const data = await conn.ops.run(signal, async () => enforce(conn.gate(), conn.request(`resource:${uri}`), () => def.read(conn)));
  return { uri, mimeType: 'application/json', text: JSON.stringify(data, null, 2) };
}
