/*
 * shadow_tools: what this server offers and what this connection may do with
 * it right now, decided by the same policy the gate enforces (without running
 * anything or writing an audit row).
 */
import { TOOL_SCHEMAS } from '../../../gen/tools/catalog.js';
import { explain } from '../../policy/gate.js';
import { PROMPTS } from '../prompts.js';
import { RESOURCES } from '../resources.js';
import { READ_ONLY, type ToolDef } from './types.js';

/** Every action a native tool can ask the gate for. */
const ACTIONS: Record<string, string[]> = {
  shadow_status: ['tool:shadow_status'],
  shadow_models: ['tool:shadow_models'],
  shadow_sessions: ['tool:shadow_sessions'],
  shadow_tools: ['tool:shadow_tools'],
  shadow_understand: ['tool:shadow_understand', 'tool:shadow_understand.save'],
  shadow_doctor: ['tool:shadow_doctor', 'tool:shadow_doctor.probe'],
  shadow_memory: ['tool:shadow_memory.read', 'tool:shadow_memory.append', 'tool:shadow_memory.replace'],
  shadow_sqlite: ['tool:shadow_sqlite'],
  shadow_goal: ['tool:shadow_goal.list', 'tool:shadow_goal.get', 'tool:shadow_goal.create', 'tool:shadow_goal.advance', 'tool:shadow_goal.abandon'],
  shadow_run: ['tool:shadow_run'],
  shadow_jobs: ['tool:shadow_jobs.list', 'tool:shadow_jobs.events', 'tool:shadow_jobs.approvals', 'tool:shadow_jobs.cancel'],
  shadow_approve: ['tool:shadow_approve.approve', 'tool:shadow_approve.deny'],
  shadow_test: ['tool:shadow_test'],
  shadow_review: ['tool:shadow_review'],
  shadow_why: ['tool:shadow_why'],
  shadow_checkpoint: ['tool:shadow_checkpoint'],
  shadow_rollback: ['tool:shadow_rollback'],
};

export const shadowTools: ToolDef = {
  name: 'shadow_tools',
  annotations: READ_ONLY,
  action: () => 'tool:shadow_tools',
  run(conn) {
    const policy = conn.engine.policy;
    const tools = Object.entries(ACTIONS).map(([name, actions]) => ({
      name,
      title: TOOL_SCHEMAS[name as keyof typeof TOOL_SCHEMAS]?.title ?? name,
      actions: actions.map((action) => {
        const d = explain(policy, conn.requestNow(action, { resource: { kind: 'self', owner: conn.owner, project: conn.project } }));
        return { action, allowed: d.allow, ...(d.allow ? {} : { denied_by: d.reasons }) };
      }),
    }));
    return {
      tools,
      resources: RESOURCES.map((r) => r.uri),
      prompts: PROMPTS.map((p) => p.name),
      connection: { transport: conn.opts.transport, allow_write: conn.opts.allowWrite, allow_approvals: conn.opts.allowApprovals, project: conn.project },
    };
  },
};
