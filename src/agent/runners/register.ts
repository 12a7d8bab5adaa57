/*
 * The settings entry of a coding-CLI runner, as `model add --provider
 * claude-code|codex|acp --command PATH [--arg ...]` writes it: an absolute path
 * to an executable that exists, fixed arguments taken literally (never split or
 * expanded), and no endpoint or key (the CLI signs in by itself).
 */
import { isAbsolute } from 'node:path';
import type { Settings } from '../../../gen/types/settings.js';
import { ScError } from '../../errors.js';
import { isRunnerProvider } from './index.js';
import { checkExecutable } from './spawn.js';

type SettingsModel = NonNullable<Settings['models']>[number];

export function runnerModelEntry(id: string, provider: string, opts: { command?: string; args?: readonly string[]; model?: string; baseUrl?: string; keyNamed?: boolean }): SettingsModel {
  if (!isRunnerProvider(provider)) throw new ScError('SC_INTERNAL', `${provider} is not a runner provider`);
  if (!opts.command) throw new ScError('SC_USAGE', `model add --provider ${provider} needs --command PATH (the CLI's executable)`);
  if (opts.baseUrl !== undefined || opts.keyNamed) throw new ScError('SC_USAGE', `a ${provider} runner signs in by itself: --base-url, --api-key-env and --api-key-secret do not apply`);
  if (!isAbsolute(opts.command)) throw new ScError('SC_BAD_VALUE', `--command must be an absolute path; got ${JSON.stringify(opts.command.slice(0, 256))}`, { option: '--command' });
  checkExecutable(opts.command);
  return { id, provider, model: opts.model ?? 'default', command: opts.command, args: [...(opts.args ?? [])] };
}
