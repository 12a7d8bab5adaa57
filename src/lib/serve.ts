/*
 * The servers of `mcp serve`, started by a host instead of a command line.
 *
 *   serveStdio({ input, output })      ─► serveOverStdio, the same bounded transport
 *   serveHttp({ host, port, token })   ─► gate (cli:serve.http) ─► startHttpGateway
 *
 * Each server is its own owner (`stdio:PID:host-N`, `http:PID:…`) on the profile's
 * shared engine when one runs, else on a temporary engine of its own. close() ends it
 * the way SIGTERM ends `mcp serve`: the connection closes, its owned jobs are cancelled
 * and their processes reaped, then the engine closes. No signal handler is installed.
 * OpenTelemetry export runs while at least one server of the host is open, when configured
 * (the OTEL_* variables of the host's environment, or the profile).
 */
import type { Engine } from '../engine/engine.js';
import { ScError } from '../errors.js';
import type { OpsContext } from '../ops/context.js';
import { openEngine } from '../ops/engine.js';
import { startTelemetryExport } from '../ops/telemetry.js';
import { enforce } from '../policy/gate.js';
import type { Checked } from './check.js';
import type { HttpServeOptions, ServerHandle, StdioServeOptions } from './options.js';

/** A server with the engine its jobs run on, which only the handle sees. */
export interface OwnedServer extends ServerHandle {
  readonly engine: Engine;
}

let serial = 0;

// One export per host process, shared by its servers: started with the first, stopped with the last.
let exporting: { users: number; stop: Promise<(() => Promise<unknown>) | null> } | undefined;

function useTelemetry(ops: OpsContext, log: (line: string) => void): () => Promise<void> {
  exporting ??= { users: 0, stop: startTelemetryExport(ops, 'library', log).catch(() => null) };
  const mine = exporting;
  mine.users++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--mine.users > 0) return;
    if (exporting === mine) exporting = undefined;
    await (await mine.stop)?.();
  };
}

function flags(o: { allowWrite?: boolean; allowApprovals?: boolean }): { allowWrite: boolean; allowApprovals: boolean } {
  for (const k of ['allowWrite', 'allowApprovals'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new ScError('SC_BAD_VALUE', `${k} must be a boolean`);
  }
  const allowWrite = o.allowWrite === true;
  const allowApprovals = o.allowApprovals === true;
  if (allowApprovals && !allowWrite) throw new ScError('SC_USAGE', 'allowApprovals needs allowWrite');
  return { allowWrite, allowApprovals };
}

export async function serveStdio(ops: OpsContext, c: Checked, o: StdioServeOptions): Promise<OwnedServer> {
  if (!o || typeof o.input?.on !== 'function' || typeof o.output?.write !== 'function') throw new ScError('SC_BAD_VALUE', 'serveStdio needs { input: Readable, output: Writable }');
  const { allowWrite, allowApprovals } = flags(o);
  const owner = `stdio:${process.pid}:host-${++serial}`;
  const release = useTelemetry(ops, c.log);
  await exporting?.stop;
  const engine = await openEngine(ops, { kind: 'stdio', owner });
  const { serveOverStdio } = await import('../server/stdio.js');
  const stop = new AbortController();
  const closed = serveOverStdio({ engine, project: c.workspace, allowWrite, allowApprovals, stdin: o.input as never, stdout: o.output, log: c.log, signals: false, stop: stop.signal, owner })
    .then(
      () => undefined,
      (err: unknown) => c.log(`shadowcode: stdio server failed: ${(err as Error).message}`),
    )
    .finally(release);
  return {
    kind: 'stdio',
    owner,
    engine,
    closed,
    close: async () => {
      stop.abort();
      await closed;
    },
  };
}

export async function serveHttp(ops: OpsContext, c: Checked, o: HttpServeOptions): Promise<OwnedServer & { url: string; port: number }> {
  if (!o || typeof o !== 'object') throw new ScError('SC_BAD_VALUE', 'serveHttp needs { token, host?, port? }');
  const { allowWrite, allowApprovals } = flags(o);
  const { checkToken, parseBind, proxyAllowances } = await import('../server/http-config.js');
  const host = o.host ?? '127.0.0.1';
  const port = o.port ?? 0;
  if (typeof host !== 'string' || !Number.isInteger(port) || port < 0) throw new ScError('SC_HTTP_BIND_INVALID', 'host must be a loopback IP and port an integer 0-65535');
  const bind = parseBind(host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
  const allowedHosts = [...(o.allowedHosts ?? [])];
  proxyAllowances(allowedHosts);
  if (typeof o.token !== 'string') throw new ScError('SC_HTTP_TOKEN_INVALID', 'serveHttp needs a token: the gateway always requires a bearer token');
  const token = checkToken(o.token, c.policy.limits.tokens);
  const release = useTelemetry(ops, c.log);
  await exporting?.stop;
  const engine = await openEngine(ops, { kind: 'http', owner: `http:${process.pid}:host-${++serial}` });
  const { startHttpGateway } = await import('../server/http.js');
  let gw;
  try {
    gw = await enforce(
      { policy: engine.policy, db: () => engine.db() },
      ops.request('cli:serve.http', { args: { bind: `${bind.host}:${bind.port}`, allowed_hosts: allowedHosts, allow_write: allowWrite, allow_approvals: allowApprovals, token_env: '(host)' } }),
      (t) => startHttpGateway(t, { engine, project: c.workspace, allowWrite, allowApprovals, bind, allowedHosts, token, log: c.log }),
    );
  } catch (err) {
    await engine.shutdown();
    await release();
    throw err;
  }
  const gateway = gw;
  let done: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  return {
    kind: 'http',
    owner: gateway.owner,
    engine,
    url: gateway.url,
    port: gateway.port,
    closed,
    close: () =>
      (done ??= (async () => {
        try {
          await gateway.close();
          await engine.shutdown();
        } finally {
          await release();
          resolveClosed();
        }
      })()),
  };
}
