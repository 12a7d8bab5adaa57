/*
 * shadowcode engine start: the profile's shared engine, so that every server and
 * CLI of the profile shares one queue, one supervisor and one set of approvals.
 * Without --foreground the engine is started in the background and this returns
 * once it answers; a second start reports the engine already running.
 */
import { launchEngine } from '../../engine/daemon/launch.js';
import { engineFiles } from '../../engine/daemon/files.js';
import { type RunningEngine, serveEngine } from '../../engine/daemon/server.js';
import { attachAgentRuntime } from '../../agent/task.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import { ensureProfileDir } from '../../store/profile.js';
import type { Ctx } from '../context.js';
import { findShared } from '../../ops/engine.js';
import { onStopSignal } from '../../util/stop-signals.js';
import type { CommandSpec, Output } from '../spec.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Shared = NonNullable<Awaited<ReturnType<typeof findShared>>>;

const alreadyRunning = (shared: Shared): Output => ({
  data: { started: false, engine: shared.info, socket: shared.files.sock },
  text: `an engine is already running for this profile: pid ${shared.info.pid} on ${shared.files.sock}`,
});

async function already(ctx: Ctx): Promise<Output | null> {
  const shared = await findShared(ctx.ops);
  return shared ? alreadyRunning(shared) : null;
}

/** The profile's engine, or null while there is none or it does not answer yet (it may still be starting). */
function answering(ctx: Ctx): Promise<Shared | null> {
  return findShared(ctx.ops).catch((err: unknown) => {
    if ((err as ScError).code === 'SC_ENGINE_UNAVAILABLE' || (err as ScError).code === 'SC_ENGINE_TIMEOUT') return null;
    throw err;
  });
}

export const command: CommandSpec = {
  name: 'engine start',
  summary: "Start the profile's shared engine (one per profile)",
  description:
    "Start the shared engine of the profile: one headless process that runs every job of the profile's servers and CLI commands on one queue, listening on a Unix socket (engine.sock, mode 0600) in the profile directory. Servers started afterwards use it instead of a temporary engine of their own. If an engine already runs, this reports it and starts nothing.",
  options: [{ name: 'foreground', type: 'boolean', description: 'run the engine in this process until SIGINT, SIGTERM or SIGHUP (logs on stderr)' }],
  args: [],
  examples: ['shadowcode engine start', 'shadowcode --profile work engine start --foreground'],
  workspace: 'ignored',
  telemetry: ({ options }) => (options.foreground === true ? 'engine' : null),
  async run(ctx, { options }) {
    ensureProfileDir(ctx.profile.dir);
    const files = engineFiles(ctx.profile.dir);
    const policy = ctx.policy();
    if (options.foreground === true) {
      const log = (line: string) => ctx.io.stderr.write(`${line}\n`);
      // One listener from before the engine starts until it has stopped: it says it is ready (and a
      // supervisor may signal it) before the gate's answer comes back here, and a signal in between
      // must neither end the process with its socket and token left behind nor be lost. A signal
      // that comes early stops the engine once it is up. Never handed over from one listener to
      // another: see onStopSignal.
      let up: RunningEngine | null = null;
      let early: NodeJS.Signals | null = null;
      const off = onStopSignal((s) => (up ? void up.stop(s) : (early ??= s)));
      let engine: RunningEngine | null;
      try {
        engine = await enforce(ctx.gate(), ctx.request('cli:engine.serve', { args: { foreground: true } }), (t) => serveEngine(t, { profileDir: ctx.profile.dir, policy, env: ctx.io.env, log, prepare: attachAgentRuntime }));
      } catch (err) {
        off();
        throw err;
      }
      if (!engine) {
        off();
        // Another engine holds the lock. Racing starts lose to one that may not answer yet: wait for it, within the start deadline.
        const end = Date.now() + policy.limits.engine.start_deadline_ms;
        for (;;) {
          const other = await answering(ctx);
          if (other) return alreadyRunning(other);
          if (Date.now() >= end) throw new ScError('SC_ENGINE_START_FAILED', `another engine holds the profile lock but did not answer on its socket within ${policy.limits.engine.start_deadline_ms} ms; try again`);
          await sleep(50);
        }
      }
      up = engine;
      if (early) void up.stop(early);
      try {
        await up.stopped;
      } finally {
        off();
      }
      return { data: { started: true, stopped: true, engine: up.info }, text: '' };
    }
    const have = await already(ctx);
    if (have) return have;
    const launched = await enforce(ctx.gate(), ctx.request('cli:engine.start'), (t) => launchEngine(t, files, ctx.io.env));
    let exited: number | null | undefined;
    void launched.exited.then((c) => (exited = c));
    const end = Date.now() + policy.limits.engine.start_deadline_ms;
    while (Date.now() < end) {
      await sleep(50);
      const shared = await answering(ctx);
      if (shared) {
        const mine = shared.info.pid === launched.pid;
        return {
          data: { started: mine, engine: shared.info, socket: shared.files.sock },
          text: mine ? `engine started: pid ${shared.info.pid} on ${shared.files.sock}` : `an engine is already running for this profile: pid ${shared.info.pid} on ${shared.files.sock}`,
        };
      }
      if (exited !== undefined) {
        const other = await answering(ctx);
        if (other) return alreadyRunning(other);
        throw new ScError('SC_ENGINE_START_FAILED', `the engine exited with status ${exited} before it answered; see ${files.log}`);
      }
    }
    throw new ScError('SC_ENGINE_START_FAILED', `the engine did not answer within ${policy.limits.engine.start_deadline_ms} ms; see ${files.log}`);
  },
};
