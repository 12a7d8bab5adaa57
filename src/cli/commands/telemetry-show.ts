/* shadowcode telemetry show: where this profile's OpenTelemetry export goes and what it sent, dropped and failed to send. */
import { telemetryShow } from '../../ops/telemetry.js';
import type { CommandSpec } from '../spec.js';
import { telemetryText } from './telemetry-view.js';

export const command: CommandSpec = {
  name: 'telemetry show',
  summary: 'Show the OpenTelemetry export: on or off, where to, and what each process sent or dropped',
  description:
    'Show whether a process of this profile started now would export OpenTelemetry traces, audit rows as logs, and metrics; where to (each signal\'s URL, and whether it leaves this machine), from which settings (the OTEL_* variables of this environment, or the profile), whether content is exported, and the counters of recent exporting processes: items sent, dropped (a full queue, or the shutdown deadline) and failed. Header values are never shown, only their names and the secrets that hold them.',
  options: [],
  args: [],
  examples: ['shadowcode telemetry show', 'shadowcode --json telemetry show'],
  workspace: 'ignored',
  async run(ctx) {
    const view = telemetryShow(ctx.ops);
    return { data: view, text: telemetryText(view) };
  },
};
