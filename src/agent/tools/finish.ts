/*
 * finish: the task's summary. The loop ends when it sees this call; in plan
 * mode the summary is the plan, recorded as a 'plan' job event that
 * shadow://plan returns.
 */
import { assertTicket, type GateTicket } from '../../ticket.js';
import { type NativeTool, ok, type ToolEnv } from './types.js';

interface Args {
  summary: string;
}

export const finishTool: NativeTool<Args> = {
  name: 'finish',
  writes: false,
  describe: () => ({}),
  run(env: ToolEnv, a: Args, ticket: GateTicket) {
    assertTicket(ticket, 'task:tool.finish');
    const summary = a.summary.slice(0, env.policy.limits.agent.summary_chars);
    if (env.ctx.mode === 'plan') env.ctx.emit('plan', { text: summary });
    return ok(summary);
  },
};
