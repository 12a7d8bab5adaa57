/* shadow_memory: read, append or replace project or task notes. */
import { appendNote, readNote, replaceNote, type Scope } from '../../engine/memory.js';
import { type ToolDef, WRITES } from './types.js';

interface Args {
  action: 'read' | 'append' | 'replace';
  scope?: Scope;
  task_id?: string;
  text?: string;
  content?: string;
  expected_hash?: string;
}

export const shadowMemory: ToolDef<Args> = {
  name: 'shadow_memory',
  annotations: WRITES,
  action: (a) => `tool:shadow_memory.${a.action}`,
  resource: (conn, a) => (a.scope === 'task' ? { kind: 'task', id: a.task_id ?? '', project: conn.project } : undefined),
  run(conn, a, ticket) {
    const db = conn.engine.db();
    const max = conn.engine.policy.limits.inspection.memory_note_bytes;
    const scope = a.scope ?? 'project';
    if (a.action === 'read') return readNote(db, conn.project, scope, a.task_id);
    if (a.action === 'append') return appendNote(ticket, db, conn.project, scope, a.task_id, a.text as string, max);
    return replaceNote(ticket, db, conn.project, scope, a.task_id, a.content as string, a.expected_hash as string, max);
  },
};
