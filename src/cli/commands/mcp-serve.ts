/*
 * shadowcode mcp serve: serve this project's engine to one MCP client over
 * stdio, or with --http as an authenticated loopback Streamable HTTP gateway.
 * Stdout carries protocol only (stdio) or nothing (HTTP); logs go to stderr.
 */
import type { Engine } from '../../engine/engine.js';
import type { Bind } from '../../server/http-config.js';
import { ScError } from '../../errors.js';
import { enforce } from '../../policy/gate.js';
import type { Ctx } from '../context.js';
import { openEngine } from '../../ops/engine.js';
import { rawStream } from '../terminal.js';
import { nextStopSignal } from '../../util/stop-signals.js';
import type { CommandSpec, Output } from '../spec.js';

export const command: CommandSpec = {
  name: 'mcp serve',
  summary: "Serve this project to your coding tool (the connected client) over stdio, or --http",
  description:
    'Serve the selected project to one connected client (your coding tool, an MCP client) over stdio (newline-delimited JSON-RPC). Read-only unless --allow-write; writes also need a trusted project and stay within its trust level. Jobs run in the profile\'s shared engine when one is running (shadowcode engine start), owned by this connection; otherwise in a temporary engine that ends with this server. Stdout carries protocol only; logs go to stderr. Cannot be combined with --json.',
  options: [
    { name: 'allow-write', type: 'boolean', description: 'let this connection change a trusted project, up to its level' },
    { name: 'allow-approvals', type: 'boolean', description: 'let this connection approve its own pending actions (needs --allow-write)' },
    { name: 'http', type: 'string', value: 'IP:PORT', description: 'serve Streamable HTTP on a loopback IP instead of stdio (port 0 picks a free one)' },
    { name: 'token-env', type: 'string', value: 'NAME', description: 'with --http: the environment variable or stored secret holding the bearer token' },
    { name: 'allowed-host', type: 'strings', value: 'HOST[:PORT]', description: 'with --http: a host name a TLS reverse proxy on this machine forwards with' },
  ],
  args: [],
  examples: [
    'shadowcode --project ~/src/app mcp serve',
    'shadowcode --project ~/src/app mcp serve --allow-write',
    'SHADOW_MCP_HTTP_TOKEN="$(openssl rand -hex 32)" shadowcode --project ~/src/app mcp serve --http 127.0.0.1:8765 --token-env SHADOW_MCP_HTTP_TOKEN',
  ],
  workspace: 'required',
  json: false,
  telemetry: ({ options }) => (options.http === undefined ? 'mcp-serve' : 'mcp-serve-http'),
  async run(ctx, { options }) {
    const allowWrite = options['allow-write'] === true;
    const allowApprovals = options['allow-approvals'] === true;
    if (allowApprovals && !allowWrite) throw new ScError('SC_USAGE', '--allow-approvals needs --allow-write');
    const http = options.http as string | undefined;
    const allowedHosts = (options['allowed-host'] as string[] | undefined) ?? [];
    if (http === undefined && (options['token-env'] !== undefined || allowedHosts.length)) throw new ScError('SC_USAGE', '--token-env and --allowed-host go with --http');
    // A refused start-up opens nothing: the bind, the proxy hosts and the token's name are checked
    // before the profile and its engine are (the token's value may be a stored secret, read after).
    const gateway = http === undefined ? undefined : await httpSettings(http, options['token-env'] as string | undefined, allowedHosts);
    // Nothing but protocol may reach stdout from here on.
    console.log = console.error;
    console.info = console.error;
    // The profile's shared engine if one runs (shadowcode engine start), else a temporary one in this process.
    const engine = await openEngine(ctx.ops, { kind: http === undefined ? 'stdio' : 'http', owner: `${http === undefined ? 'stdio' : 'http'}:${process.pid}` });
    if (engine.mode === 'shared') ctx.io.stderr.write(`shadowcode: jobs run in the shared engine (pid ${engine.sharedPid})\n`);
    engine.onSharedLost = (message) => ctx.io.stderr.write(`shadowcode: ${message}\n`);
    if (gateway) return serveHttp(ctx, engine, gateway, allowWrite, allowApprovals);
    // Started by hand at a terminal, it would otherwise sit silent: say what it is waiting for.
    if (ctx.io.stdin.isTTY) {
      ctx.io.stderr.write('shadowcode: waiting for an MCP client on stdin (newline-delimited JSON-RPC); a coding tool normally launches this itself, see shadowcode mcp register. Ctrl-D ends it.\n');
    }
    const { serveOverStdio } = await import('../../server/stdio.js');
    const code = await serveOverStdio({
      engine,
      project: ctx.requireWorkspace('mcp serve'),
      allowWrite,
      allowApprovals,
      stdin: ctx.io.stdin as never,
      // The protocol is for the client program, byte for byte: not the terminal guard's to escape.
      stdout: rawStream(ctx.io.stdout),
      log: (line) => ctx.io.stderr.write(`${line}\n`),
    });
    return { data: null, text: '', exitCode: code };
  },
};

interface HttpSettings {
  readonly http: string;
  readonly bind: Bind;
  readonly tokenEnv: string;
  readonly allowedHosts: string[];
}

async function httpSettings(http: string, tokenEnv: string | undefined, allowedHosts: string[]): Promise<HttpSettings> {
  const { parseBind, proxyAllowances } = await import('../../server/http-config.js');
  const bind = parseBind(http);
  proxyAllowances(allowedHosts); // refuses wildcards, paths and schemes before anything listens
  if (tokenEnv === undefined) throw new ScError('SC_USAGE', '--http needs --token-env NAME: the gateway always requires a bearer token');
  return { http, bind, tokenEnv, allowedHosts };
}

async function serveHttp(ctx: Ctx, engine: Engine, { http, bind, tokenEnv, allowedHosts }: HttpSettings, allowWrite: boolean, allowApprovals: boolean): Promise<Output> {
  const { resolveToken } = await import('../../server/http-config.js');
  const { startHttpGateway } = await import('../../server/http.js');
  const project = ctx.requireWorkspace('mcp serve');
  const log = (line: string) => ctx.io.stderr.write(`${line}\n`);
  let gw: Awaited<ReturnType<typeof startHttpGateway>>;
  try {
    const token = resolveToken(tokenEnv, ctx.io.env, (n) => engine.secrets().reveal(n), engine.policy.limits.tokens);
    gw = await enforce(
      { policy: engine.policy, db: () => engine.db() },
      ctx.request('cli:serve.http', { args: { bind: http, allowed_hosts: allowedHosts, allow_write: allowWrite, allow_approvals: allowApprovals, token_env: tokenEnv } }),
      (t) => startHttpGateway(t, { engine, project, allowWrite, allowApprovals, bind, allowedHosts, token, log }),
    );
  } catch (e) {
    // A gateway that never listened leaves no engine behind (its database, its ownership socket).
    await engine.shutdown();
    throw e;
  }
  // Listened for before it says it is ready: a supervisor may signal it on that line, and would
  // otherwise end the process on the spot, without the gateway's and the engine's cleanup.
  const stop = nextStopSignal();
  log(`shadowcode: gateway ready at ${gw.url} for ${project} (${allowWrite ? 'write' : 'read-only'}${allowApprovals ? ', approvals' : ''})`);
  const signal = await stop.signal;
  log(`shadowcode: ${signal}: stopping the gateway`);
  await gw.close();
  await engine.shutdown();
  stop.off();
  log('shadowcode: gateway stopped');
  return { data: null, text: '', exitCode: 0 };
}
