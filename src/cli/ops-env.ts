/* What an operation (src/ops/) needs, from the CLI's context: the person at the terminal is the caller. */
import type { OpsEnv } from '../ops/sandbox.js';
import type { Ctx } from './context.js';

export function opsEnv(ctx: Ctx): OpsEnv {
  return { gate: ctx.gate(), db: () => ctx.db(), policy: ctx.policy(), profileDir: ctx.profile.dir, env: ctx.io.env, request: (action, extra) => ctx.request(action, extra) };
}
