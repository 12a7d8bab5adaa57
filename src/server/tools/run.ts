/*
 * shadow_run: delegate one task to the engine's model, as a job of this owner.
 *
 *   {prompt, mode, permission_level = read_only, model?} ─► gate tool:shadow_run with
 *   requested_level = permission_level (a level above the connection's is refused)
 *   ─► the model entry must exist ─► jobs.submitAgent ─► {job_id} at once
 *
 * The task's ceiling is the ticket's: min(connection flags, project trust level,
 * permission_level). Plan and review tasks are read_only whatever was asked.
 */
import type { Level } from '../../ticket.js';
import type { ToolDef } from './types.js';

interface Args {
  prompt: string;
  mode: 'plan' | 'review' | 'build';
  permission_level?: Level;
  model?: string;
}

export const shadowRun: ToolDef<Args> = {
  name: 'shadow_run',
  // "delegate a task to an agent" scores no higher on the description than Claude Code's own
  // deferred tools (TaskStop, SendMessage...), and those come first on a tie.
  searchHint: 'delegate or start a coding task for an agent: fix a bug, add a feature',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  action: () => 'tool:shadow_run',
  requestedLevel: (a) => a.permission_level ?? 'read_only',
  async run(conn, a, ticket) {
    // The agent's runtime (model providers, their HTTP and TLS stacks) loads with the first
    // task: a gateway that never delegates one does not pay for it at every start.
    const { attachAgentRuntime, resolveModelEntry } = await import('../../agent/task.js');
    const engine = conn.engine;
    const entry = resolveModelEntry(engine.freshSettings(), a.model);
    attachAgentRuntime(engine);
    const ceiling: Level = a.mode === 'build' ? ticket.ceiling : 'read_only';
    // To the shared engine when one runs (it has its own agent runtime), else to this process's queue.
    const { job } = await engine.submitJob(conn.ownerSpec, { kind: 'agent', prompt: a.prompt, mode: a.mode, model_id: entry.id, ceiling });
    return {
      job_id: job.id,
      state: job.state,
      mode: a.mode,
      ceiling,
      model: entry.id,
      next: `The task runs in the background. Follow it with shadow_jobs {"action":"events","job_id":"${job.id}"}; a command it wants to run appears under shadow_jobs {"action":"approvals"} and runs only after shadow_approve (or: shadowcode --project ${conn.project} approvals approve ID).`,
    };
  },
};
