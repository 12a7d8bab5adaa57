/*
 * What a command declares about itself. Usage text, parsing and --help are all
 * generated from this, so a command's documentation cannot drift from what it accepts.
 */
import type { Ctx } from './context.js';

export interface OptionSpec {
  readonly name: string;
  readonly type: 'boolean' | 'string' | 'strings';
  readonly value?: string;
  readonly choices?: readonly string[];
  readonly default?: string;
  readonly description: string;
}

export interface ArgSpec {
  readonly name: string;
  readonly required: boolean;
  readonly description: string;
  /** The last argument may take every remaining word (after `--`, options too). */
  readonly variadic?: boolean;
}

export interface Output {
  /** What --json prints; also what tests inspect. */
  readonly data: unknown;
  /** What a person sees without --json. */
  readonly text: string;
  /** Non-zero when the command ran but found a problem (audit verify on a broken chain). */
  readonly exitCode?: number;
  /** With --json the command already wrote its output as JSON lines (shadowcode run's events); nothing more is printed. */
  readonly streamed?: boolean;
}

export interface Input {
  readonly options: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly args: readonly string[];
}

export interface CommandSpec {
  readonly name: string;
  readonly summary: string;
  readonly description?: string;
  readonly options: readonly OptionSpec[];
  readonly args: readonly ArgSpec[];
  readonly examples: readonly string[];
  readonly workspace: 'required' | 'optional' | 'ignored';
  /** Added to a usage error about extra arguments. */
  readonly usageHint?: string;
  /** False when the command's stdout is reserved for something else (mcp serve). */
  readonly json?: boolean;
  /**
   * A long-running command that exports OpenTelemetry when it is configured: the role it
   * exports as (shadowcode.role), or null for this invocation (a launcher that only starts another).
   */
  readonly telemetry?: (input: Input) => string | null;
  /**
   * False for the commands that configure telemetry itself (telemetry set, off): a short command
   * otherwise sends the audit rows it committed when telemetry is configured, and a change of
   * the endpoint is not sent to the endpoint it names.
   */
  readonly exportsAuditRows?: false;
  run(ctx: Ctx, input: Input): Promise<Output>;
}
