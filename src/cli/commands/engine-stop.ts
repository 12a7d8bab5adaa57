/*
 * shadowcode engine stop: the shared engine cancels every job it runs, stops its
 * background processes, reaps their process groups, and exits; this waits for that (ops/engine.ts).
 */
import { stopEngine } from '../../ops/engine.js';
import type { CommandSpec } from '../spec.js';

export const command: CommandSpec = {
  name: 'engine stop',
  summary: "Stop the profile's shared engine, cancelling its jobs",
  description: "Stop the profile's shared engine (with none running, it says so and exits 0). It cancels its running and queued jobs (their command process groups are killed and reaped) and stops its background processes before it exits; this command returns once the engine process is gone.",
  options: [],
  args: [],
  examples: ['shadowcode engine stop'],
  workspace: 'ignored',
  async run(ctx) {
    const r = await stopEngine(ctx.ops);
    if (!r.stopped) return { data: r, text: `no engine is running for ${ctx.profile.dir}; nothing to stop` };
    return { data: r, text: `engine stopped (pid ${r.pid}); ${r.cancelled_jobs} unfinished job(s) cancelled` };
  },
};
