/*
 * Which engine a CLI invocation or a server uses: the profile's running shared
 * engine if there is one (it answers on its socket and passes the peer check),
 * else a temporary engine in this process.
 */
import { RemoteEngine } from '../engine/daemon/remote.js';
import { Engine } from '../engine/engine.js';
import type { Ctx } from './context.js';

export async function findShared(ctx: Ctx, who: { kind: 'cli' | 'stdio' | 'http'; owner: string } = { kind: 'cli', owner: ctx.owner }): Promise<RemoteEngine | null> {
  return RemoteEngine.find(ctx.gate(), ctx.profile.dir, who);
}

/** An Engine that forwards jobs to the shared engine when one runs. */
export async function openEngine(ctx: Ctx, who: { kind: 'cli' | 'stdio' | 'http'; owner: string }): Promise<Engine> {
  const engine = new Engine(ctx.profile.dir, ctx.policy(), ctx.io.env);
  const shared = await RemoteEngine.find({ policy: engine.policy, db: () => engine.db() }, ctx.profile.dir, who);
  if (shared) engine.useShared(shared);
  return engine;
}
