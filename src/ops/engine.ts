/*
 * Which engine an operation or a server uses: the profile's running shared engine if
 * there is one (it answers on its socket and passes the peer check), else a temporary
 * engine in this process.
 *
 *   findShared(ops, who)  ─► RemoteEngine.find (gate engine:connect) ─► the shared engine | null
 *   openEngine(ops, who)  ─► an Engine that forwards jobs to the shared engine when one runs
 *   stopEngine(ops)       ─► none running: nothing to do ─► control `stop` (it cancels its jobs, stops
 *                            its background processes, reaps their groups) ─► wait, bounded, until its
 *                            process is gone ─► how many of its jobs ended cancelled
 */
import { engineFiles } from '../engine/daemon/files.js';
import { controlRequest, RemoteEngine } from '../engine/daemon/remote.js';
import { Engine } from '../engine/engine.js';
import { getJob } from '../engine/job-events.js';
import { pidRunning } from '../engine/owners.js';
import { ScError } from '../errors.js';
import type { OpsContext, OpsEnv } from './context.js';

export type Who = { kind: 'cli' | 'stdio' | 'http'; owner: string };

export async function findShared(ops: Pick<OpsContext, 'gate' | 'profileDir' | 'owner'>, who: Who = { kind: 'cli', owner: ops.owner }): Promise<RemoteEngine | null> {
  return RemoteEngine.find(ops.gate, ops.profileDir, who);
}

/** An Engine that forwards jobs to the shared engine when one runs. */
export async function openEngine(ops: Pick<OpsEnv, 'profileDir' | 'policy' | 'env'>, who: Who): Promise<Engine> {
  const engine = new Engine(ops.profileDir, ops.policy, ops.env);
  const shared = await RemoteEngine.find({ policy: engine.policy, db: () => engine.db() }, ops.profileDir, who);
  if (shared) engine.useShared(shared);
  return engine;
}

export type StopResult = { readonly stopped: false; readonly running: false } | { readonly stopped: true; readonly pid: number; readonly cancelled_jobs: number };

export async function stopEngine(ops: OpsContext): Promise<StopResult> {
  const files = engineFiles(ops.profileDir);
  const shared = await findShared(ops);
  // Like `engine start` with one running: the wanted state already holds, so it is not an error.
  if (!shared) return { stopped: false, running: false };
  const { data } = await controlRequest(ops.gate, files, { kind: 'cli', owner: 'cli' }, { type: 'stop' });
  const ids = Array.isArray(data.jobs) ? (data.jobs as string[]) : [];
  const pid = shared.info.pid;
  const deadline = ops.policy.limits.engine.stop_deadline_ms;
  const end = Date.now() + deadline;
  // Until the process has exited. Its pid is not free before init reaps it (no new engine can be
  // mistaken for it), but that reaping may come a second or more later: an exited one is done.
  while (pidRunning(pid)) {
    if (Date.now() > end) throw new ScError('SC_ENGINE_TIMEOUT', `the engine (pid ${pid}) did not exit within ${deadline} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
  // Counted from the store once the engine is gone: only its own jobs that did end cancelled.
  const db = ops.db();
  return { stopped: true, pid, cancelled_jobs: ids.filter((id) => getJob(db, id)?.state === 'cancelled').length };
}
