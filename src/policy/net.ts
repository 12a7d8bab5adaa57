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

/** A host as a sandbox grant names it: lower case, no trailing dot, an IPv6 address without brackets. */
export interface HostPort {
  readonly host: string;
  readonly port: number | null;
}

const NAME = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** `HOST`, `HOST:PORT`, `[IPv6]`, `[IPv6]:PORT` or a bare IPv6 address; null when it is none of these. */
export function parseHostPort(text: string): HostPort | null {
  let host = text.trim().toLowerCase();
  let port: number | null = null;
  const bracket = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(host);
  if (bracket) {
    host = bracket[1] as string;
    if (bracket[2] !== undefined) port = Number(bracket[2]);
  } else if ((host.match(/:/g) ?? []).length === 1) {
    const [h, p] = host.split(':') as [string, string];
    if (!/^\d{1,5}$/.test(p)) return null;
    host = h;
    port = Number(p);
  }
  if (port !== null && (port < 1 || port > 65535)) return null;
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.length === 0 || host.length > 253) return null;
  if (host.includes(':')) {
    const v6 = ipv6(host);
    return v6 ? { host: v6.slice(1, -1), port } : null;
  }
  // All digits and dots is an IPv4 address or nothing (`1.2.3` is not a name either).
  if (/^[\d.]+$/.test(host)) return ipv4(host) ? { host, port } : null;
  return NAME.test(host) ? { host, port } : null;
}

/** `host:port`, with brackets around an IPv6 address. */
export function hostPortText(h: { host: string; port: number | null }): string {
  const host = h.host.includes(':') ? `[${h.host}]` : h.host;
  return h.port === null ? host : `${host}:${h.port}`;
}

/**
 * Whether an address (as a resolver returns it) is one the internet at large cannot
 * reach: loopback, private, shared (CGNAT), link-local, unspecified, multicast,
 * reserved, documentation, and the IPv6 unique-local and mapped forms of these.
 */
export function isNonPublicAddress(address: string): boolean {
  const v4 = ipv4(address);
  if (v4) {
    const [a, b] = v4 as [number, number, number, number];
    return a === 0 || a === 10 || a === 127 || a >= 224 || (a === 100 && b >= 64 && b < 128) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) ||
      (a === 192 && b === 168) || (a === 192 && b === 0 && v4[2] === 0) || (a === 192 && b === 0 && v4[2] === 2) || (a === 198 && (b === 18 || b === 19)) ||
      (a === 198 && b === 51 && v4[2] === 100) || (a === 203 && b === 0 && v4[2] === 113);
  }
  const v6 = ipv6(address);
  if (!v6) return true;
  const bare = v6.slice(1, -1);
  if (bare === '::' || bare === '::1') return true;
  // ::ffff:a.b.c.d (URL writes it as ::ffff:XXXX:XXXX): the IPv4 address decides.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(bare);
  if (mapped) {
    const hi = parseInt(mapped[1] as string, 16);
    const lo = parseInt(mapped[2] as string, 16);
    return isNonPublicAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  const first = parseInt(bare.split(':')[0] || '0', 16);
  // fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast, 2001:db8::/32 documentation, ::/8 reserved.
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00 || first < 0x100 || bare.startsWith('2001:db8:');
}
