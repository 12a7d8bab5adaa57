/* shadowcode telemetry off: nothing of this profile is exported, whatever the environment says. */
import { telemetryOff } from '../../ops/telemetry.js';
import type { CommandSpec } from '../spec.js';
import { telemetryText } from './telemetry-view.js';

export const command: CommandSpec = {
  name: 'telemetry off',
  summary: 'Turn OpenTelemetry export off for this profile, whatever OTEL_* variables say',
  description:
    "Turn the profile's OpenTelemetry export off: servers, engines and runs started afterwards export nothing and load nothing of OpenTelemetry, even where OTEL_EXPORTER_OTLP_ENDPOINT is set, until the next telemetry set. Processes already running keep exporting until they end. The change is a policy decision, recorded in the audit log.",
  options: [],
  args: [],
  examples: ['shadowcode telemetry off'],
  workspace: 'ignored',
  async run(ctx) {
    const view = await telemetryOff(ctx.ops);
    return { data: view, text: telemetryText(view) };
  },
};
