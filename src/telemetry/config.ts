/*
 * What an exporting process is told to do, once ops/telemetry.ts has read the OTEL_*
 * variables or the profile's settings (and the secrets their headers name). Types only:
 * reading a configuration loads nothing of OpenTelemetry.
 */

export type Signal = 'traces' | 'logs' | 'metrics';
export const SIGNALS: readonly Signal[] = ['traces', 'logs', 'metrics'];

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Where one signal goes. */
export interface SignalTarget {
  /** The full URL (…/v1/traces); never shown with credentials. */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** Header values: secrets, never printed or logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export interface BatchConfig {
  readonly queueItems: number;
  readonly batchItems: number;
  readonly scheduleMs: number;
}

export interface ExportConfig {
  /** Where the settings came from: the OTEL_* environment, or the profile (telemetry set). */
  readonly source: 'env' | 'profile';
  readonly targets: Readonly<Partial<Record<Signal, SignalTarget>>>;
  readonly serviceName: string;
  readonly resource: Readonly<Record<string, string>>;
  /** The profile opted in to exporting tool arguments and results, prompts and model text. */
  readonly content: boolean;
  readonly contentChars: number;
  readonly spans: BatchConfig;
  readonly logs: BatchConfig;
  readonly metricIntervalMs: number;
  readonly metricTimeoutMs: number;
  readonly shutdownMs: number;
  readonly statsWriteMs: number;
  /** After a failed send the collector is left alone for a back-off that doubles from min to max. */
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  /** How many times a batch the collector could not take is sent again. */
  readonly batchRetries: number;
}
