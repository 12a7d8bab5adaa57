/*
 * The gateway URL a client is told to use: http to a loopback IP or localhost,
 * an explicit port, the path exactly /mcp, and nothing else (no credentials,
 * query or fragment). Checked on the text as typed, before URL normalises it.
 */
import { ScError } from '../errors.js';
import { isLoopbackHost } from '../policy/net.js';

export function checkGatewayUrl(raw: string): string {
  const bad = (why: string) => new ScError('SC_REGISTER_URL_INVALID', `--url ${why}; expected http://127.0.0.1:PORT/mcp`, { url_shape: why });
  const m = /^http:\/\/(\[[0-9A-Fa-f:.]+\]|[^/?#@:[\]]+):(\d{1,5})(\/[^?#]*)?$/.exec(raw);
  if (/[?#]/.test(raw)) throw bad('must not contain a query or a fragment');
  if (/^[a-z]+:\/\/[^/]*@/i.test(raw)) throw bad('must not contain credentials');
  if (!/^http:\/\//i.test(raw)) throw bad('must use http:// (the gateway is loopback-only)');
  if (!m) throw bad('must name a host and an explicit port');
  const [, host, port, path] = m as unknown as [string, string, string, string | undefined];
  if (!isLoopbackHost(host)) throw bad(`must point to a loopback address or localhost, not ${host}`);
  const n = Number(port);
  if (n < 1 || n > 65535) throw bad('has a port outside 1-65535');
  if (path !== '/mcp') throw bad('must have the path /mcp exactly');
  return `http://${host.toLowerCase()}:${n}/mcp`;
}
