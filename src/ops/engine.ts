/*
 * Which engine an operation or a server uses: the profile's running shared engine if
 * there is one (it answers on its socket and passes the peer check), else a temporary
 * engine in this process.
 *
 *   findShared(ops, who)  ─► RemoteEngine.find (gate engine:connect) ─► the shared engine | null
 *   openEngine(ops, who)  ─► an Engine that forwards jobs to the shared engine when one runs
 */
import { RemoteEngine } from '../engine/daemon/remote.js';
import { Engine } from '../engine/engine.js';
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
