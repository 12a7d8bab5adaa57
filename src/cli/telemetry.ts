/*
 * OpenTelemetry export around a long-running command (mcp serve, engine start
 * --foreground, run): started before it when configured, flushed after it.
 *
 *   startTelemetryExport (ops) ─► the command ─► stop: queued items sent within
 *   limits.telemetry.shutdown_ms ─► an export still waiting on a collector that does not
 *   answer would hold the process up to its own timeout: this command's process exits instead
 *
 * A short command (approvals approve, trust, …) exports only its audit rows, after it ran and
 * only if it committed any, a refused one's too: its answer or error is printed ─►
 * exportCommandRows ─► configured? start the log export ─► the rows ─► stop, within the same
 * deadline, before the process exits.
 */
import { exportCommittedRows, startTelemetryExport, telemetryDepsOf } from '../ops/telemetry.js';
import type { CommittedAudit } from '../store/audit.js';
import type { Ctx } from './context.js';

export async function withTelemetry<T>(ctx: Ctx, role: string, fn: () => Promise<T>): Promise<T> {
  const stop = await startTelemetryExport(telemetryDepsOf(ctx), role, (line) => ctx.io.stderr.write(`${line}\n`));
  try {
    return await fn();
  } finally {
    if (stop) {
      const { abandoned } = await stop();
      // Only the CLI's own process, never a library host's: the command is over, and nothing
      // but the exporter's retry timers can be left. The exit code is main()'s (process.exitCode).
      if (abandoned) setTimeout(() => process.exit(), 100).unref();
    }
  }
}

/** The audit rows a short command committed, as log records, sent before it exits; nothing when telemetry is not configured. */
export async function exportCommandRows(ctx: Ctx, rows: readonly CommittedAudit[]): Promise<void> {
  const abandoned = await exportCommittedRows(telemetryDepsOf(ctx), rows, (line) => ctx.io.stderr.write(`${line}\n`));
  if (abandoned) setTimeout(() => process.exit(), 100).unref();
}
