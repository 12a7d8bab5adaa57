/*
 * From a submitted agent job to its runner.
 *
 *   shadow_run / shadowcode run ─► jobs.submitAgent(spec) ─► (queued) ─► start
 *   ─► agentRunners(engine, deps)(spec) ─► the model entry (spec.modelId or the default)
 *   ─► runnerFor(entry, deps): a vendor CLI runner, or NativeLoop over the entry's provider
 *
 * Credentials are resolved by the provider factory when the task starts, never
 * at submission, and never logged.
 */
import type { Settings } from '../../gen/types/settings.js';
import { ScError } from '../errors.js';
import type { GateEnv } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import type { Db } from '../store/db.js';
import type { SecretStore } from '../store/secrets.js';
import type { TaskContext, TaskToolSource } from './types.js';

export type SettingsModel = NonNullable<Settings['models']>[number];

/** What a runner is built from. */
export interface TaskDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretStore;
  readonly policy: Policy;
  readonly db: Db;
  readonly gateEnv: GateEnv;
  /** The outbound MCP client's tools for one task (src/client/task-tools.ts), or null for none. */
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
