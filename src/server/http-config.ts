/*
 * The gateway's start-up inputs, validated before anything listens: a loopback
 * IP bind, proxy host names, and the bearer token named by --token-env.
 */
import { ScError } from '../errors.js';
import { isIpLiteral, isLoopbackIp } from '../policy/net.js';
import { registerSecretValue } from '../util/secret-values.js';
import { BEARER_TOKEN, normalOrigin } from './http-guards.js';

export interface Bind {
  readonly host: string; // as passed to listen(): 127.0.0.1 or ::1
  readonly port: number;
}

export function parseBind(value: string): Bind {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  if (!m) throw new ScError('SC_HTTP_BIND_INVALID', `--http ${value}: expected IP:PORT, e.g. 127.0.0.1:8765 or [::1]:8765`);
  const host = (m[1] ?? m[2]) as string;
  const port = Number(m[3]);
  if (!isIpLiteral(host)) throw new ScError('SC_HTTP_BIND_INVALID', `--http ${value}: bind to a loopback IP, not the host name ${host}`);
  if (!isLoopbackIp(host)) throw new ScError('SC_HTTP_BIND_INVALID', `--http ${value}: only loopback IPs (127.0.0.0/8, ::1) may be bound; put a TLS reverse proxy in front for remote use`);
  if (port > 65535) throw new ScError('SC_HTTP_BIND_INVALID', `--http ${value}: port must be 0-65535`);
  return { host: m[1] ? '::1' : host, port };
}

/** `mcp.example.com` or `mcp.example.com:8443`, lower-cased; no scheme, path, wildcard or credentials. */
export function parseAllowedHost(value: string): { host: string; port: number } {
  const m = /^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)(?::(\d{1,5}))?$/.exec(value.toLowerCase());
  if (!m || value.length > 253) {
    throw new ScError('SC_HTTP_HOST_INVALID', `--allowed-host ${value}: give a host name with an optional port (mcp.example.com or mcp.example.com:8443); wildcards, paths and schemes are refused`);
  }
  const port = m[2] ? Number(m[2]) : 443;
  if (port < 1 || port > 65535) throw new ScError('SC_HTTP_HOST_INVALID', `--allowed-host ${value}: port must be 1-65535`);
  return { host: m[1] as string, port };
}

/** Host header values (`name` and `name:port`) and the one https Origin each allowed proxy host implies. */
export function proxyAllowances(values: readonly string[]): { hosts: string[]; origins: string[] } {
  const hosts: string[] = [];
  const origins: string[] = [];
  for (const v of values) {
    const { host, port } = parseAllowedHost(v);
    hosts.push(`${host}:${port}`);
    if (port === 443) hosts.push(host);
    origins.push(port === 443 ? `https://${host}` : `https://${host}:${port}`);
  }
  return { hosts, origins };
}

export function loopbackHosts(bind: Bind, port: number): string[] {
  const ip = bind.host.includes(':') ? `[${bind.host}]` : bind.host;
  return [`${ip}:${port}`, `localhost:${port}`];
}

/** The gateway's own origins, as a page served from it would send them: `http://127.0.0.1:8765`, `http://localhost:8765`. */
export function loopbackOrigins(bind: Bind, port: number): string[] {
  return loopbackHosts(bind, port).map((h) => normalOrigin(`http://${h}`));
}

export function resolveToken(name: string, env: NodeJS.ProcessEnv, fromStore: (name: string) => string | undefined, limits: { min_length: number; max_length: number }): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) throw new ScError('SC_HTTP_TOKEN_INVALID', '--token-env must name an environment variable or a stored secret');
  const token = env[name] !== undefined && env[name] !== '' ? env[name] : fromStore(name);
  if (token === undefined) throw new ScError('SC_HTTP_TOKEN_INVALID', `${name} is neither set in the environment nor stored with shadowcode secret set`);
  return checkToken(token, limits, `the token in ${name}`, name);
}

/** The same length and character rules for a token handed over as a value (the library's serveHttp). */
export function checkToken(token: string, limits: { min_length: number; max_length: number }, what = 'the token', name = 'gateway-token'): string {
  registerSecretValue(token, name);
  if (token.length < limits.min_length || token.length > limits.max_length || !BEARER_TOKEN.test(token)) {
    throw new ScError('SC_HTTP_TOKEN_INVALID', `${what} must be ${limits.min_length}-${limits.max_length} bearer-token characters (A-Z a-z 0-9 - . _ ~ + / and trailing =); generate one with openssl rand -hex 32`);
  }
  return token;
}
