/*
 * The OpenTelemetry packages the export uses, in one place: the build bundles this module and
 * what it imports into dist/otel.cjs, its own file, and rewrites encode.ts's import of it to a
 * require of that file (scripts/build.mjs).
 *
 *   dist/cli.cjs, dist/lib.cjs  ─► nothing of OpenTelemetry (a build check fails otherwise)
 *   encode.ts ─► dist/otel.cjs  ─► serializers, resource, meters: one file to read and compile,
 *                                  loaded only when an export starts
 *
 * Why one bundled file rather than the installed packages: requiring them resolves, reads and
 * compiles ~200 files, several times the cost of one file, at every start of an exporting process.
 */
export { JsonLogsSerializer, JsonMetricsSerializer, JsonTraceSerializer, ProtobufLogsSerializer, ProtobufMetricsSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
export { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
export { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
