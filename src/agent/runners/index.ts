/*
 * The coding-CLI runners behind one factory, for the task host.
 *
 *   settings entry {provider: claude-code | codex | acp, command, args}
 *     ─► createRunner(entry, deps) ─► TaskRunner.run(ctx) ─► runCli(...) with that CLI's driver
 */
import type { Settings } from '../../../gen/types/settings.js';
import { ScError } from '../../errors.js';
import type { TaskRunner } from '../types.js';
import { driveAcp } from './acp.js';
import { driveClaude } from './claude.js';
import { driveCodex } from './codex.js';
import { type RunnerDeps, type RunnerEntry, type RunnerProvider, runCli } from './run.js';

export type { RunnerDeps, RunnerEntry, RunnerProvider };
export type SettingsModel = NonNullable<Settings['models']>[number];

const PROVIDERS: readonly RunnerProvider[] = ['claude-code', 'codex', 'acp'];

export function isRunnerProvider(p: string): p is RunnerProvider {
  return (PROVIDERS as readonly string[]).includes(p);
}

const DRIVERS: Record<RunnerProvider, Parameters<typeof runCli>[3]> = { 'claude-code': driveClaude, codex: driveCodex, acp: driveAcp };

export function createRunner(entry: SettingsModel, deps: RunnerDeps): TaskRunner {
  if (!isRunnerProvider(entry.provider)) throw new ScError('SC_INTERNAL', `${entry.provider} is not a runner provider`);
  if (!entry.command) throw new ScError('SC_RUNNER_NOT_FOUND', `model ${entry.id} (${entry.provider}) has no command; register it with shadowcode model add ${entry.id} --provider ${entry.provider} --command PATH`);
  const drive = DRIVERS[entry.provider];
  const e: RunnerEntry = { id: entry.id, provider: entry.provider, command: entry.command, args: entry.args ?? [] };
  return { run: (ctx) => runCli(e, deps, ctx, drive) };
}
