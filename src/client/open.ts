/*
 * Opening one granted server through the gate.
 *
 *   gate 'mcp:connect' {definition id, hash, transport, endpoint_kind}
 *     ─► stdio: env built now (env_refs resolved now) ─► supervised child
 *        http:  bounded fetch, bearer resolved now
 *     ─► McpConnection (initialize + discovery under the limits)
 *     ─► catalog scrubbed of known secret values, canonicalized, hashed,
 *        recorded with the grant (pins.ts; only a review creates a pin)
 *
 * The caller decides what a changed or unreviewed catalog means (tasks refuse
 * both); the pin row is updated either way so `shadowcode mcp tools` can show the diff.
 */
import type { Limits } from '../../gen/types/limits.js';
import { isLoopbackHost } from '../policy/net.js';
import { enforce, type GateEnv } from '../policy/gate.js';
import { scrubDeep } from '../policy/scrub.js';
import type { Policy } from '../policy/load.js';
import { type McpAsker, mcpConnectRequest, type ServerRef } from '../policy/requests.js';
import type { Db } from '../store/db.js';
import { type CanonicalTool, canonicalCatalog } from './catalog.js';
import { McpConnection } from './connection.js';
import { connectionEnv, resolveRef, type SecretSource } from './env.js';
import { openHttp } from './http.js';
import { type PinState, recordCatalog } from './pins.js';
import { openStdio } from './stdio.js';
import type { Target } from './targets.js';

export interface Opened {
  readonly conn: McpConnection;
  readonly catalog: CanonicalTool[];
  readonly catalog_hash: string;
  /** null: no catalog of this server was ever reviewed for the project. */
  readonly pinned_hash: string | null;
  readonly pin: PinState;
}

export interface OpenDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretSource;
  readonly policy: Policy;
  readonly db: Db;
  readonly gateEnv: GateEnv;
}

/** How the server is reached, as telemetry names it: a pipe to a process, or TCP to a host and port. */
function peerOf(t: Target): { transport: 'pipe' | 'tcp'; address?: string; port?: number } {
  if (t.def.transport !== 'http' || !t.def.url) return { transport: 'pipe' };
  const u = new URL(t.def.url);
  return { transport: 'tcp', address: u.hostname, port: Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
}

export function endpointKind(t: Target): 'loopback' | 'remote' {
  // A stdio server with the whole network reaches remote hosts as an HTTP one does; named hosts go through the proxy, each decided there.
  if (t.def.transport === 'stdio') return t.def.sandbox?.network === true ? 'remote' : 'loopback';
  if (!t.def.url) return 'loopback';
  return isLoopbackHost(new URL(t.def.url).hostname) ? 'loopback' : 'remote';
}

/** The server as a gate request names it (policy/requests.ts). */
export function serverRef(t: Target): ServerRef {
  return { id: t.id, hash: t.hash, endpoint_kind: endpointKind(t) };
}

/** The definition's timeout_sec, held inside the policy's bounds, in ms. */
export function timeoutMs(t: Target, limits: Limits): number {
  const s = Math.min(limits.catalog.timeout_sec_max, Math.max(limits.catalog.timeout_sec_min, t.def.timeout_sec));
  return Math.round(s * 1000);
}

/** review: the person at the CLI reads the catalog (mcp enable, mcp tools --refresh), so a first catalog may become the pin. */
export async function openTarget(deps: OpenDeps, request: McpAsker, project: string, t: Target, signal: AbortSignal, review = false): Promise<Opened> {
  const limits = deps.policy.limits;
  const server = serverRef(t);
  const req = mcpConnectRequest(request, server, { definition: t.id, transport: t.def.transport, endpoint_kind: server.endpoint_kind });
  return enforce(deps.gateEnv, req, async (ticket) => {
    const ms = timeoutMs(t, limits);
    const transport =
      t.def.transport === 'stdio'
        ? openStdio(ticket, {
            argv: t.def.command as string[],
            cwd: project,
            env: connectionEnv(deps.policy.environment, deps.env, t.id, t.def.env, t.def.env_refs, deps.secrets),
            graceMs: limits.stdio_client.kill_grace_ms,
            frames: limits.stdio_client,
            stderrBytes: limits.stdio_client.stderr_capture_bytes,
            stderrTailLines: limits.stdio_client.stderr_tail_lines,
            network: t.def.sandbox?.network === true,
            ...(t.def.sandbox ? { declared: t.def.sandbox } : {}),
            policy: deps.policy,
            db: deps.db,
          })
        : openHttp(ticket, {
            url: t.def.url as string,
            bearer: t.def.api_key_env ? resolveRef(t.def.api_key_env, deps.secrets, deps.env) : undefined,
            bearerName: t.def.api_key_env,
            limits: limits.http_client,
            lifetimeBytes: limits.stdio_client.lifetime_bytes,
            timeoutMs: ms,
          });
    const conn = await McpConnection.open(ticket, transport, { id: t.id, timeoutMs: ms, catalog: limits.catalog, maxConnections: limits.stdio_client.connections_per_process, signal, peer: peerOf(t) });
    try {
      // Scrubbed before it is hashed, pinned, shown or offered: a server given a secret cannot echo it through its metadata.
      const catalog = canonicalCatalog(scrubDeep(conn.tools));
      const rec = recordCatalog(ticket, deps.db, project, t.id, catalog, review);
      return { conn, catalog, catalog_hash: rec.hash, pinned_hash: rec.pinned_hash, pin: rec.state };
    } catch (err) {
      await conn.close();
      throw err;
    }
  });
}
