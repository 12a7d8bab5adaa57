/*
 * From a submitted agent job to its runner.
 *
 *   shadow_run / shadowcode run ─► jobs.submitAgent(spec) ─► (queued) ─► start
 *   ─► agentRunners(engine, deps)(spec) ─► the model entry (spec.modelId or the default)
 *   ─► runnerFor(entry, deps): a coding-CLI runner (claude-code, codex, acp), or NativeLoop over the entry's provider
 *      with the granted MCP servers' tools (openTaskTools: Build tasks of trusted projects only)
 *
 * Credentials are resolved by the provider factory when the task starts, never
 * at submission, and never logged.
 */
import type { Settings } from '../../gen/types/settings.js';
import type { Engine } from '../engine/engine.js';
import type { SettingsModel } from '../engine/models.js';
import { ScError } from '../errors.js';
import type { GateEnv } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import type { SecretStore } from '../store/secrets.js';
import { tel } from '../telemetry/hooks.js';
import { providerName } from './providers/config.js';
import { NativeLoop } from './loop.js';
import { createProvider } from './providers/index.js';
import { createRunner, isRunnerProvider } from './runners/index.js';
import type { TaskContext, TaskRunner, TaskToolSource } from './types.js';

export type { SettingsModel };

/** What a runner is built from. */
export interface TaskDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretStore;
  readonly policy: Policy;
  readonly db: Db;
  readonly gateEnv: GateEnv;
  /** The profile's settings as the task started (runners read what they may share). */
  readonly settings?: Settings;
  /** The external tools of one task; by default the outbound MCP client's (src/client/task-tools.ts). */
  readonly toolSource?: (ctx: TaskContext) => TaskToolSource | null;
}

/** The configured model a task asks for: by id, or the profile's default (or the only one). */
export function resolveModelEntry(settings: Settings, id: string | null | undefined): SettingsModel {
  const models = settings.models ?? [];
  const want = id ?? settings.default_model ?? (models.length === 1 ? models[0]?.id : undefined);
  if (!want) throw new ScError('SC_MODEL_NOT_FOUND', models.length ? 'no model given and no default model set; pass model, or run shadowcode model add ... --default' : 'no model is configured; add one with shadowcode model add ID --provider ... --model NAME');
  const entry = models.find((m) => m.id === want);
  if (!entry) throw new ScError('SC_MODEL_NOT_FOUND', `no configured model ${JSON.stringify(want)}; shadowcode model list shows them`);
  return entry;
}

/**
 * The granted servers' tools for one task. The outbound client (and the SDK
 * client under it) is loaded only when a Build task may use it, so starting a
 * server or a command does not pay for it.
 */
function grantedTools(deps: TaskDeps, ctx: TaskContext): TaskToolSource | null {
  if (ctx.mode !== 'build' || ctx.ceiling === 'read_only') return null;
  let inner: Promise<TaskToolSource | null> | undefined;
  const load = () =>
    (inner ??= import('../client/task-tools.js').then((m) =>
      m.openTaskTools({ env: deps.env, secrets: deps.secrets, policy: deps.policy, db: deps.db, gateEnv: deps.gateEnv, ...(deps.settings ? { settings: deps.settings } : {}) }, ctx),
    ));
  let loaded: TaskToolSource | null = null;
  return {
    async tools() {
      loaded = await load();
      return loaded ? loaded.tools() : [];
    },
    has: (name) => loaded?.has(name) ?? false,
    async call(name, args, c) {
      const s = await load();
      if (!s) throw new ScError('SC_TOOL_UNKNOWN', `there is no tool named ${JSON.stringify(name.slice(0, 128))}`);
      return s.call(name, args, c);
    },
    async close() {
      if (inner) await (await inner)?.close();
    },
  };
}

/** The runner for one task: a coding CLI for a runner provider, else the native loop over the entry's model provider. */
export function runnerFor(entry: SettingsModel, deps: TaskDeps): TaskRunner {
  if (isRunnerProvider(entry.provider)) return createRunner(entry, { env: deps.env, secrets: deps.secrets, policy: deps.policy, db: deps.db, gateEnv: deps.gateEnv, ...(deps.settings ? { settings: deps.settings } : {}) });
  const toolSource = deps.toolSource ?? ((ctx: TaskContext) => grantedTools(deps, ctx));
  return new NativeLoop(createProvider(entry, deps), { policy: deps.policy, db: () => deps.db, gateEnv: deps.gateEnv, env: deps.env, toolSource });
}

/**
 * Lets the engine's jobs run agent tasks. Settings are read again when each task
 * starts, so a model added or removed since submission is seen; a missing model
 * fails that task with SC_MODEL_NOT_FOUND.
 */
export function attachAgentRuntime(engine: Engine, extra: Pick<TaskDeps, 'toolSource'> = {}): void {
  const jobs = engine.jobs();
  if (jobs.hasAgentRunners) return;
  jobs.useAgentRunners((spec) => {
    const settings = engine.freshSettings();
    const entry = resolveModelEntry(settings, spec.modelId);
    // The job's invoke_agent span (active here) names the model the task runs on.
    tel()?.annotate({ 'gen_ai.provider.name': providerName(entry.provider), 'gen_ai.request.model': entry.model, 'shadowcode.model.id': entry.id });
    return runnerFor(entry, { env: engine.env, secrets: engine.secrets(), policy: engine.policy, db: engine.db(), gateEnv: { policy: engine.policy, db: () => engine.db() }, settings, ...extra });
  });
}
