/*
 * Address rules shared by registration, the HTTP gateway and outbound
 * definitions: what counts as loopback. Pure string checks; no lookups, so
 * `localhost` means loopback by definition, never by whatever DNS says.
 */

function ipv4(host: string): number[] | null {
  const parts = host.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.map(Number);
}

/** Canonical form of an IPv6 literal (brackets optional), or null when it is not one. */
function ipv6(host: string): string | null {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (!bare.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(bare)) return null;
  try {
    return new URL(`http://[${bare}]/`).hostname;
  } catch {
    return null;
  }
}

export function isLoopbackIp(host: string): boolean {
  const v4 = ipv4(host);
  if (v4) return v4[0] === 127;
  return ipv6(host) === '[::1]';
}

export function isIpLiteral(host: string): boolean {
  return ipv4(host) !== null || ipv6(host) !== null;
}

export function isLoopbackHost(host: string): boolean {
  return host.toLowerCase() === 'localhost' || isLoopbackIp(host);
}
