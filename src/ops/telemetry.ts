/*
 * OpenTelemetry export: its settings and its start, for every surface (the CLI's
 * telemetry commands, status, mcp serve, the shared engine, the library, shadow_doctor).
 *
 *   resolveTelemetry(env, profile settings)  which settings apply, read in this order:
 *     profile `off`, or OTEL_SDK_DISABLED=true        ─► off, whatever else is set
 *     any OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT        ─► the environment (the standard variables)
 *     the profile's endpoint (telemetry set)          ─► the profile, headers from the secret store
 *     nothing                                         ─► off: nothing of the SDK is loaded
 *   startTelemetryExport(deps, role)  ─► gate cli:telemetry.export (audited: where to, loopback or
 *     remote) ─► import('../telemetry/sdk.js') ─► tel() reports; returns the stop (flush within
 *     limits.telemetry.shutdown_ms). A failure to start is one stderr line, never a failed start.
 *   telemetrySet / telemetryOff  ─► checked input ─► gate cli:telemetry.set|off ─► settings.json
 *   telemetryShow                ─► the view, with the counters of the profile's exporting processes
 *
 * Header values are secrets: the profile holds secret names (secret set), values are read only
 * to start an export, and no view, error or audit row ever holds one.
 */
import type { Settings } from '../../gen/types/settings.js';
import type { Status } from '../../gen/types/status.js';
import type { TelemetryView } from '../../gen/types/telemetry-view.js';
import { ScError } from '../errors.js';
import { enforce, type GateEnv, type GateRequest } from '../policy/gate.js';
import type { Policy } from '../policy/load.js';
import { isLoopbackHost } from '../policy/net.js';
import { scrubDeep } from '../policy/scrub.js';
import type { CommittedAudit } from '../store/audit.js';
import type { Db } from '../store/db.js';
import { checkSecretName } from '../store/secrets.js';
import { check } from '../schema/validate.js';
import { readSettings, updateTelemetrySettings } from '../store/settings.js';
import type { BatchConfig, ExportConfig, OtlpProtocol, Signal, SignalTarget } from '../telemetry/config.js';
import { SIGNALS } from '../telemetry/config.js';
import { tel } from '../telemetry/hooks.js';
import { readCounts } from '../telemetry/stats.js';
import { VERSION } from '../version.js';

export type { TelemetryView };
type ProfileTelemetry = NonNullable<Settings['telemetry']>;
type Limits = Policy['limits']['telemetry'];

/** What the telemetry operations need of their caller. */
export interface TelemetryDeps {
  readonly profileDir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly policy: Policy;
  readonly gate: GateEnv;
  /** A request of the caller (the CLI user, an embedding host) for the gate. */
  readonly request: (action: string, extra?: Partial<Pick<GateRequest, 'resource' | 'args'>>) => GateRequest;
  readonly db: () => Db;
  readonly secrets: () => { reveal(name: string): string | undefined; list(): ReadonlyArray<{ name: string }> };
}

/** The deps of a CLI context or a library host's context (both have this shape). */
export function telemetryDepsOf(c: {
  readonly profile: { readonly dir: string };
  readonly io: { readonly env: NodeJS.ProcessEnv };
  policy(): Policy;
  gate(): GateEnv;
  request(action: string, extra?: Partial<Pick<GateRequest, 'resource' | 'args'>>): GateRequest;
  db(): Db;
  secrets(): { reveal(name: string): string | undefined; list(): ReadonlyArray<{ name: string }> };
}): TelemetryDeps {
  return { profileDir: c.profile.dir, env: c.io.env, policy: c.policy(), gate: c.gate(), request: (a, e) => c.request(a, e), db: () => c.db(), secrets: () => c.secrets() };
}

export type Resolved =
  | { readonly state: 'off' | 'invalid'; readonly why: string; readonly source: 'env' | 'profile' | null }
  | { readonly state: 'on'; readonly why: string; readonly source: 'env' | 'profile'; readonly config: ExportConfig };

const ENV_SIGNAL: Record<Signal, string> = { traces: 'TRACES', logs: 'LOGS', metrics: 'METRICS' };
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;

const env1 = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v ? v : undefined;
};

/** A positive integer variable within [min, max]; anything else is ignored (the OpenTelemetry rule for a bad value). */
function intVar(env: NodeJS.ProcessEnv, names: readonly string[], min: number, max: number, fallback: number): number {
  for (const n of names) {
    const v = env1(env, n);
    if (v === undefined || !/^\d{1,12}$/.test(v)) continue;
    return Math.min(max, Math.max(min, Number(v)));
  }
  return fallback;
}

/** W3C-baggage-like `k=v,k2=v2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). */
function pairs(text: string | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const part of text.split(',')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // The name of the variable only: its value may be a credential.
      throw new ScError('SC_TELEMETRY_INVALID', `${what} holds an entry that is not name=percent-encoded-value`);
    }
    if (!key) throw new ScError('SC_TELEMETRY_INVALID', `${what} holds an entry that is not name=value`);
    out[key] = value;
  }
  return out;
}

function checkUrl(raw: string, what: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ScError('SC_TELEMETRY_INVALID', `${what} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ScError('SC_TELEMETRY_INVALID', `${what} must be an http:// or https:// URL (OTLP over HTTP)`);
  if (u.username || u.password) throw new ScError('SC_TELEMETRY_INVALID', `${what} carries credentials in the URL; put them in a header instead (shadowcode secret set, then --header NAME=secret:SECRET)`);
  return u;
}

/** Scheme, host, port and path: what may be shown and audited of an endpoint. */
export function shownUrl(u: URL | string): string {
  const url = typeof u === 'string' ? new URL(u) : u;
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

const hostOf = (u: URL) => (u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname);
const isLoopback = (u: URL) => isLoopbackHost(hostOf(u));

function protocolOf(value: string | undefined, what: string): OtlpProtocol {
  if (value === undefined) return 'http/protobuf';
  if ((PROTOCOLS as readonly string[]).includes(value)) return value as OtlpProtocol;
  throw new ScError('SC_TELEMETRY_INVALID', `${what}=${value.slice(0, 32)} is not supported: use http/protobuf or http/json${value === 'grpc' ? ' (gRPC is not offered; a Collector accepts OTLP/HTTP on port 4318)' : ''}`);
}

function batchOf(env: NodeJS.ProcessEnv, prefix: 'OTEL_BSP' | 'OTEL_BLRP', l: Limits): BatchConfig {
  const queueItems = intVar(env, [`${prefix}_MAX_QUEUE_SIZE`], 1, l.queue_items, l.queue_items);
  return {
    queueItems,
    batchItems: intVar(env, [`${prefix}_MAX_EXPORT_BATCH_SIZE`], 1, queueItems, Math.min(l.batch_items, queueItems)),
    scheduleMs: intVar(env, [`${prefix}_SCHEDULE_DELAY`], 10, 600_000, l.schedule_ms),
  };
}

function common(env: NodeJS.ProcessEnv, profile: ProfileTelemetry | undefined, l: Limits): Omit<ExportConfig, 'source' | 'targets'> {
  const resource = pairs(env1(env, 'OTEL_RESOURCE_ATTRIBUTES'), 'OTEL_RESOURCE_ATTRIBUTES');
  const metricIntervalMs = intVar(env, ['OTEL_METRIC_EXPORT_INTERVAL'], 1000, 3_600_000, l.metric_interval_ms);
  return {
    serviceName: env1(env, 'OTEL_SERVICE_NAME') ?? profile?.service_name ?? resource['service.name'] ?? 'shadowcode',
    resource,
    content: profile?.content === true,
    contentChars: l.content_chars,
    spans: batchOf(env, 'OTEL_BSP', l),
    logs: batchOf(env, 'OTEL_BLRP', l),
    metricIntervalMs,
    metricTimeoutMs: intVar(env, ['OTEL_METRIC_EXPORT_TIMEOUT'], 100, metricIntervalMs, Math.min(l.export_timeout_ms, metricIntervalMs)),
    shutdownMs: l.shutdown_ms,
    statsWriteMs: l.stats_write_ms,
    backoffMinMs: l.backoff_min_ms,
    backoffMaxMs: Math.max(l.backoff_min_ms, l.backoff_max_ms),
    batchRetries: l.batch_retries,
  };
}

function fromEnv(env: NodeJS.ProcessEnv, profile: ProfileTelemetry | undefined, l: Limits): ExportConfig {
  const base = env1(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const targets: Partial<Record<Signal, SignalTarget>> = {};
  const shared = pairs(env1(env, 'OTEL_EXPORTER_OTLP_HEADERS'), 'OTEL_EXPORTER_OTLP_HEADERS');
  for (const s of SIGNALS) {
    const S = ENV_SIGNAL[s];
    if ((env1(env, `OTEL_${S}_EXPORTER`) ?? 'otlp').split(',').map((x) => x.trim()).includes('none')) continue;
    const own = env1(env, `OTEL_EXPORTER_OTLP_${S}_ENDPOINT`);
    if (own === undefined && base === undefined) continue;
    const url = own !== undefined ? checkUrl(own, `OTEL_EXPORTER_OTLP_${S}_ENDPOINT`) : checkUrl(`${(base as string).replace(/\/+$/, '')}/v1/${s}`, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    const protoVar = env1(env, `OTEL_EXPORTER_OTLP_${S}_PROTOCOL`) !== undefined ? `OTEL_EXPORTER_OTLP_${S}_PROTOCOL` : 'OTEL_EXPORTER_OTLP_PROTOCOL';
    targets[s] = {
      url: url.href,
      protocol: protocolOf(env1(env, protoVar), protoVar),
      headers: { ...shared, ...pairs(env1(env, `OTEL_EXPORTER_OTLP_${S}_HEADERS`), `OTEL_EXPORTER_OTLP_${S}_HEADERS`) },
      timeoutMs: intVar(env, [`OTEL_EXPORTER_OTLP_${S}_TIMEOUT`, 'OTEL_EXPORTER_OTLP_TIMEOUT', s === 'traces' ? 'OTEL_BSP_EXPORT_TIMEOUT' : s === 'logs' ? 'OTEL_BLRP_EXPORT_TIMEOUT' : 'OTEL_METRIC_EXPORT_TIMEOUT'], 1, l.export_timeout_ms, l.export_timeout_ms),
    };
  }
  return { source: 'env', targets, ...common(env, profile, l) };
}

function fromProfile(env: NodeJS.ProcessEnv, p: ProfileTelemetry, reveal: (name: string) => string | undefined, l: Limits): ExportConfig {
  const base = checkUrl(p.endpoint as string, 'the profile\'s telemetry endpoint');
  const headers: Record<string, string> = {};
  for (const h of p.headers ?? []) {
    const v = reveal(h.secret);
    if (v === undefined) throw new ScError('SC_SECRET_NOT_FOUND', `the telemetry header ${h.name} names secret ${h.secret}, which is not stored (shadowcode secret set ${h.secret})`, { name: h.secret });
    headers[h.name] = v;
  }
  const protocol = p.protocol ?? 'http/protobuf';
  const targets: Partial<Record<Signal, SignalTarget>> = {};
  for (const s of SIGNALS) targets[s] = { url: `${base.href.replace(/\/+$/, '')}/v1/${s}`, protocol, headers, timeoutMs: intVar(env, ['OTEL_EXPORTER_OTLP_TIMEOUT'], 1, l.export_timeout_ms, l.export_timeout_ms) };
  return { source: 'profile', targets, ...common(env, p, l) };
}

const ENDPOINT_VARS = ['OTEL_EXPORTER_OTLP_ENDPOINT', ...SIGNALS.map((s) => `OTEL_EXPORTER_OTLP_${ENV_SIGNAL[s]}_ENDPOINT`)];

/** Which settings apply in `env` with the profile's `profile` settings; secrets are read only for an export that would start. */
export function resolveTelemetry(env: NodeJS.ProcessEnv, profile: ProfileTelemetry | undefined, reveal: (name: string) => string | undefined, l: Limits): Resolved {
  if (profile?.off) return { state: 'off', why: 'turned off in this profile (shadowcode telemetry off); OTEL_* variables are ignored', source: 'profile' };
  if (env1(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return { state: 'off', why: 'OTEL_SDK_DISABLED=true', source: 'env' };
  const fromVars = ENDPOINT_VARS.some((n) => env1(env, n) !== undefined);
  if (!fromVars && !profile?.endpoint) return { state: 'off', why: 'not configured: no OTEL_EXPORTER_OTLP_ENDPOINT and no shadowcode telemetry set', source: null };
  const source = fromVars ? 'env' : 'profile';
  try {
    const config = fromVars ? fromEnv(env, profile, l) : fromProfile(env, profile as ProfileTelemetry, reveal, l);
    if (Object.keys(config.targets).length === 0) return { state: 'off', why: 'every signal is set to none (OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER, OTEL_METRICS_EXPORTER)', source };
    const where = [...new Set(Object.values(config.targets).map((t) => shownUrl(new URL(t.url).origin)))].join(', ');
    return { state: 'on', why: `exporting ${Object.keys(config.targets).join(', ')} to ${where} (from ${source === 'env' ? 'the OTEL_* variables' : 'the profile'})`, source, config };
  } catch (err) {
    if (!(err instanceof ScError)) throw err;
    return { state: 'invalid', why: err.message, source };
  }
}

function profileTelemetry(profileDir: string): ProfileTelemetry | undefined {
  return readSettings(profileDir).telemetry;
}

/** The view of telemetry for show, set and off: never a header value. */
export function telemetryView(deps: Pick<TelemetryDeps, 'profileDir' | 'env' | 'policy'>, profile: ProfileTelemetry | undefined = profileTelemetry(deps.profileDir)): TelemetryView {
  const l = deps.policy.limits.telemetry;
  // Secrets are not read for a view: a header whose secret is missing shows as the start would report it.
  const r = resolveTelemetry(deps.env, profile, () => '', l);
  const targets =
    r.state === 'on'
      ? SIGNALS.filter((s) => r.config.targets[s]).map((s) => {
          const t = r.config.targets[s] as SignalTarget;
          const u = new URL(t.url);
          return { signal: s, url: shownUrl(u), protocol: t.protocol, loopback: isLoopback(u), header_names: Object.keys(t.headers).sort() };
        })
      : [];
  return check<TelemetryView>('telemetry-view', {
    state: r.state,
    why: r.why,
    source: r.source,
    service_name: r.state === 'on' ? r.config.serviceName : null,
    targets,
    remote: targets.some((t) => !t.loopback),
    content: profile?.content === true,
    profile: profile ? { ...profile, ...(profile.endpoint ? { endpoint: shownUrl(profile.endpoint) } : {}) } : null,
    processes: readCounts(deps.profileDir, l.stats_keep_ms),
  }, 'SC_INTERNAL', 'telemetry view');
}

/** The short form in `shadowcode status`. */
export function telemetryStatus(deps: Pick<TelemetryDeps, 'profileDir' | 'env' | 'policy'>): NonNullable<Status['telemetry']> {
  let v: TelemetryView;
  try {
    v = telemetryView(deps);
  } catch (err) {
    return { state: 'invalid', why: (err as Error).message, source: 'profile', endpoints: [], remote: false, content: false, dropped: 0, failed: 0 };
  }
  const sum = (f: (p: TelemetryView['processes'][number]) => number) => v.processes.reduce((n, p) => n + f(p), 0);
  return {
    state: v.state,
    why: v.why,
    source: v.source,
    endpoints: v.targets.map((t) => `${t.signal} ${t.url}${t.loopback ? '' : ' (remote)'}`),
    remote: v.remote,
    content: v.content,
    dropped: sum((p) => p.traces.dropped + p.logs.dropped + p.metrics.dropped),
    failed: sum((p) => p.traces.failed + p.logs.failed + p.metrics.failed),
  };
}

/** This process's own export, for shadow_doctor: null when it exports nothing. */
export function telemetryHere(): ReturnType<NonNullable<ReturnType<typeof tel>>['counts']> | null {
  return tel()?.counts() ?? null;
}

export interface TelemetrySetInput {
  readonly endpoint: string;
  readonly protocol?: string | undefined;
  /** NAME=secret:SECRET each. */
  readonly headers?: readonly string[] | undefined;
  /** The CLI user's decision to send to a host that is not this machine. */
  readonly remote?: boolean | undefined;
  readonly content?: boolean | undefined;
  readonly serviceName?: string | undefined;
}

/** Checks a `telemetry set` before anything is decided or written. */
export function checkTelemetrySet(input: TelemetrySetInput, secretNames: readonly string[]): ProfileTelemetry {
  const url = checkUrl(input.endpoint, '--endpoint');
  if (url.search || url.hash) throw new ScError('SC_TELEMETRY_INVALID', '--endpoint takes no query or fragment: the signal paths (/v1/traces, …) are appended to it');
  if (input.endpoint.length > 2048) throw new ScError('SC_TELEMETRY_INVALID', '--endpoint is longer than 2048 characters');
  const protocol = protocolOf(input.protocol, '--protocol');
  const headers = (input.headers ?? []).map((h) => {
    const eq = h.indexOf('=');
    const name = eq > 0 ? h.slice(0, eq) : '';
    const ref = eq > 0 ? h.slice(eq + 1) : '';
    if (!HEADER_NAME.test(name)) throw new ScError('SC_TELEMETRY_INVALID', `--header wants NAME=secret:SECRET with an HTTP header name, not ${JSON.stringify(name.slice(0, 64) || h.slice(0, 16))}`);
    // Only a reference is ever taken: a value on the command line would sit in shell history and ps.
    if (!ref.startsWith('secret:')) throw new ScError('SC_TELEMETRY_INVALID', `--header ${name} takes a stored secret, as ${name}=secret:SECRET (store the value first with shadowcode secret set SECRET); a value on the command line is refused`);
    const secret = ref.slice('secret:'.length);
    checkSecretName(secret);
    if (!secretNames.includes(secret)) throw new ScError('SC_SECRET_NOT_FOUND', `no secret ${secret} is stored; store the header value first with shadowcode secret set ${secret}`, { name: secret });
    return { name, secret };
  });
  if (new Set(headers.map((h) => h.name.toLowerCase())).size !== headers.length) throw new ScError('SC_TELEMETRY_INVALID', '--header names a header twice');
  if (headers.length > 16) throw new ScError('SC_TELEMETRY_INVALID', 'at most 16 --header options');
  const loopback = isLoopback(url);
  if (!loopback && input.remote !== true) {
    throw new ScError('SC_TELEMETRY_REMOTE_UNCONFIRMED', `${url.host} is not this machine: spans, audit rows and metrics would leave it. Add --remote to send them there`, { host: hostOf(url) });
  }
  if (!loopback && headers.length && url.protocol !== 'https:') {
    throw new ScError('SC_TELEMETRY_INSECURE', `headers from the secret store go only over https, or to this machine; ${url.host} is reached over plain http`, { host: hostOf(url) });
  }
  const serviceName = input.serviceName;
  if (serviceName !== undefined && !/^[\x21-\x7e][\x20-\x7e]{0,127}$/.test(serviceName)) throw new ScError('SC_TELEMETRY_INVALID', '--service-name takes 1-128 printable ASCII characters');
  return {
    endpoint: url.href,
    protocol,
    ...(headers.length ? { headers } : {}),
    ...(loopback ? {} : { remote: true }),
    ...(input.content === true ? { content: true } : {}),
    ...(serviceName !== undefined ? { service_name: serviceName } : {}),
  };
}

/** `telemetry set`: the gate decides (audited with where to and whether that leaves the machine), then settings.json. */
export async function telemetrySet(deps: TelemetryDeps, input: TelemetrySetInput): Promise<TelemetryView> {
  const next = checkTelemetrySet(input, deps.secrets().list().map((s) => s.name));
  const url = new URL(next.endpoint as string);
  const request = deps.request('cli:telemetry.set', {
    resource: { kind: 'telemetry', endpoint_kind: isLoopback(url) ? 'loopback' : 'remote', host: hostOf(url).slice(0, 256) },
    args: { endpoint: shownUrl(url), protocol: next.protocol, header_names: (next.headers ?? []).map((h) => h.name), header_refs: (next.headers ?? []).map((h) => h.secret), content: next.content === true, service_name: next.service_name ?? null },
  });
  const saved = await enforce(deps.gate, request, (t) => updateTelemetrySettings(t, deps.profileDir, deps.db(), (s) => ({ ...s, telemetry: next })));
  return telemetryView(deps, saved.telemetry);
}

/** `telemetry off`: nothing is exported from this profile until the next `telemetry set`, whatever the environment says. */
export async function telemetryOff(deps: TelemetryDeps): Promise<TelemetryView> {
  const saved = await enforce(deps.gate, deps.request('cli:telemetry.off'), (t) => updateTelemetrySettings(t, deps.profileDir, deps.db(), (s) => ({ ...s, telemetry: { off: true } })));
  return telemetryView(deps, saved.telemetry);
}

/** `telemetry show`: reads only. */
export function telemetryShow(deps: Pick<TelemetryDeps, 'profileDir' | 'env' | 'policy'>): TelemetryView {
  return telemetryView(deps);
}

/**
 * Starts this process's export when telemetry is configured, and returns how to stop it
 * (sending what is queued, within the policy's deadline). When it is not configured this
 * loads nothing and returns null; when it cannot start, it says why in one line and the
 * process goes on without it.
 */
export async function startTelemetryExport(deps: TelemetryDeps, role: string, log: (line: string) => void, only?: { readonly signals: readonly Signal[]; readonly countsOnLossOnly?: boolean }): Promise<(() => Promise<{ readonly abandoned: boolean }>) | null> {
  if (tel()) return null;
  let r: Resolved;
  try {
    // The environment decides alone when it turns export off: the profile is then not even read.
    if (deps.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
    r = resolveTelemetry(deps.env, profileTelemetry(deps.profileDir), (n) => deps.secrets().reveal(n), deps.policy.limits.telemetry);
  } catch (err) {
    log(`shadowcode: telemetry is off: ${(err as Error).message}`);
    return null;
  }
  if (r.state === 'invalid') log(`shadowcode: telemetry is off: ${r.why}`);
  if (r.state !== 'on') return null;
  const config: ExportConfig = only ? { ...r.config, targets: Object.fromEntries(Object.entries(r.config.targets).filter(([s]) => only.signals.includes(s as Signal))) } : r.config;
  if (!Object.keys(config.targets).length) return null;
  const urls = Object.values(config.targets).map((t) => new URL(t.url));
  const remote = urls.find((u) => !isLoopback(u));
  try {
    const request = deps.request('cli:telemetry.export', {
      resource: { kind: 'telemetry', endpoint_kind: remote ? 'remote' : 'loopback', host: hostOf(remote ?? (urls[0] as URL)).slice(0, 256) },
      args: { source: config.source, role, signals: Object.keys(config.targets), endpoints: [...new Set(urls.map((u) => shownUrl(u)))], protocol: [...new Set(Object.values(config.targets).map((t) => t.protocol))], content: config.content },
    });
    const t = await enforce(deps.gate, request, async (ticket) => {
      const { startSdk } = await import('../telemetry/sdk.js');
      return startSdk(ticket, { config, profileDir: deps.profileDir, version: VERSION, role, scrub: scrubDeep, countsOnLossOnly: only?.countsOnLossOnly });
    });
    return () => t.shutdown();
  } catch (err) {
    log(`shadowcode: telemetry is off: it could not start (${(err as ScError).code ?? 'error'}: ${(err as Error).message.split('\n')[0]?.slice(0, 200)})`);
    return null;
  }
}

/**
 * Audit rows a short CLI command committed, exported as log records before it exits (the
 * export starts only now, logs only, and stops within limits.telemetry.shutdown_ms). Nothing
 * happens when telemetry is not configured, or is already running in this process. True when
 * a send was still under way at the deadline.
 */
export async function exportCommittedRows(deps: TelemetryDeps, rows: readonly CommittedAudit[], log: (line: string) => void): Promise<boolean> {
  if (!rows.length || tel()) return false;
  // One of many short processes: its counts are kept only when it lost something, for status to say so.
  const stop = await startTelemetryExport(deps, 'cli', log, { signals: ['logs'], countsOnLossOnly: true });
  if (!stop) return false;
  tel()?.audited(rows);
  return (await stop()).abandoned;
}
