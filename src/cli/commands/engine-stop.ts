/*
 * shadowcode engine stop: the shared engine cancels every job it runs, stops its
 * background processes, reaps their process groups, and exits; this waits for that.
 */
import { engineFiles } from '../../engine/daemon/files.js';
import { controlRequest } from '../../engine/daemon/remote.js';
import { getJob } from '../../engine/job-events.js';
import { pidRunning } from '../../engine/owners.js';
import { ScError } from '../../errors.js';
import { findShared } from '../../ops/engine.js';
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
    const files = engineFiles(ctx.profile.dir);
    const shared = await findShared(ctx.ops);
    // Like `engine start` with one running: the wanted state already holds, so it is not an error.
    if (!shared) return { data: { stopped: false, running: false }, text: `no engine is running for ${ctx.profile.dir}; nothing to stop` };
    const { data } = await controlRequest(ctx.gate(), files, { kind: 'cli', owner: 'cli' }, { type: 'stop' });
    const ids = Array.isArray(data.jobs) ? (data.jobs as string[]) : [];
    const pid = shared.info.pid;
    const end = Date.now() + ctx.policy().limits.engine.stop_deadline_ms;
    // Until the process has exited. Its pid is not free before init reaps it (no new engine can be
    // mistaken for it), but that reaping may come a second or more later: an exited one is done.
    while (pidRunning(pid)) {
      if (Date.now() > end) throw new ScError('SC_ENGINE_TIMEOUT', `the engine (pid ${pid}) did not exit within ${ctx.policy().limits.engine.stop_deadline_ms} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
    // Counted from the store once the engine is gone: only its own jobs that did end cancelled.
    const db = ctx.db();
    const jobs = ids.filter((id) => getJob(db, id)?.state === 'cancelled').length;
    return { data: { stopped: true, pid, cancelled_jobs: jobs }, text: `engine stopped (pid ${pid}); ${jobs} unfinished job(s) cancelled` };
  },
};
