/* shadowcode telemetry set: export this profile's traces, audit rows and metrics to an OTLP/HTTP endpoint. */
import { ScError } from '../../errors.js';
import { telemetrySet } from '../../ops/telemetry.js';
import type { CommandSpec } from '../spec.js';
import { telemetryText } from './telemetry-view.js';

export const command: CommandSpec = {
  name: 'telemetry set',
  summary: "Export this profile's spans, audit rows and metrics to an OpenTelemetry collector (OTLP over HTTP)",
  description:
    "Store the profile's OpenTelemetry export: the collector's OTLP/HTTP base URL (/v1/traces, /v1/logs and /v1/metrics are appended), the protocol, and headers whose values come from the secret store. It replaces any earlier telemetry settings of the profile and applies to servers, engines and runs started afterwards, whenever their environment sets no OTEL_EXPORTER_OTLP_*ENDPOINT variable (hosts often launch mcp serve with a filtered environment). An endpoint that is not this machine needs --remote. Tool arguments and results, prompts and model text are exported only with --content, and then scrubbed of known secrets. The change is a policy decision, recorded in the audit log.",
  options: [
    { name: 'endpoint', type: 'string', value: 'URL', description: 'the OTLP/HTTP base URL of the collector, e.g. http://127.0.0.1:4318' },
    { name: 'protocol', type: 'string', value: 'P', choices: ['http/protobuf', 'http/json'], default: 'http/protobuf', description: 'the OTLP encoding' },
    { name: 'header', type: 'strings', value: 'NAME=secret:SECRET', description: 'a header sent with every export, its value read from a stored secret (shadowcode secret set SECRET)' },
    { name: 'remote', type: 'boolean', description: 'allow an endpoint that is not this machine: spans, audit rows and metrics leave it' },
    { name: 'content', type: 'boolean', description: 'also export tool arguments and results, prompts and model text, scrubbed of secrets' },
    { name: 'service-name', type: 'string', value: 'NAME', description: 'service.name of the exported data when OTEL_SERVICE_NAME is not set (default shadowcode)' },
  ],
  args: [],
  examples: [
    'shadowcode telemetry set --endpoint http://127.0.0.1:4318',
    'shadowcode telemetry set --endpoint http://127.0.0.1:4318 --protocol http/json --service-name laptop-7',
    'shadowcode telemetry set --endpoint https://otel.example.com --remote --header Authorization=secret:OTEL_AUTH',
  ],
  workspace: 'ignored',
  async run(ctx, { options }) {
    if (typeof options.endpoint !== 'string') throw new ScError('SC_USAGE', 'telemetry set needs --endpoint URL, e.g. --endpoint http://127.0.0.1:4318');
    const view = await telemetrySet(ctx.ops, {
      endpoint: options.endpoint,
      protocol: options.protocol as string | undefined,
      headers: options.header as string[] | undefined,
      remote: options.remote === true,
      content: options.content === true,
      serviceName: options['service-name'] as string | undefined,
    });
    return { data: view, text: telemetryText(view) };
  },
};
