// Where a webhook (or an upstream provider) may be reached: the URL rules checked before any DNS lookup, and the
// addresses a connection may go to (global unicast; loopback too in sandbox mode), every IPv6 form that carries an
// IPv4 address judged by that address. Pure: the delivery client, the upstream client and the save-time checks share it.
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

export interface UrlPolicy {
  /** sandbox mode: http to loopback is allowed (and loopback addresses), nothing else is relaxed */
  readonly sandbox: boolean;
}

export function unbracketed(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function isLoopbackName(hostname: string): boolean {
  const host = unbracketed(hostname).toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}

/**
 * Why an address may not be connected to, or undefined when it may: only global unicast addresses
 * (IPv4-mapped IPv6 judged as the IPv4 inside), plus loopback in sandbox mode. Loopback, private,
 * link-local (cloud metadata), CGNAT, multicast, unspecified, reserved and the translation ranges are refused.
 */
export function blockedAddressReason(address: string, policy: UrlPolicy): string | undefined {
  const host = unbracketed(address);
  if (!ipaddr.isValid(host)) return `'${host}' is not an IP address`;
  const parsed = ipaddr.process(host);
  const carried = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : undefined;
  if (carried !== undefined) {
    // reaches (or names) the IPv4 address it carries: judged as that address
    const reason = blockedAddressReason(carried.address, policy);
    return reason === undefined ? undefined : `the address ${host} carries ${carried.address} (${carried.form}): ${reason}`;
  }
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && policy.sandbox) return undefined;
  return `the address ${host} is in a blocked range (${range})`;
}

/**
 * The IPv4 address an IPv6 address carries, by the forms that embed one (the IPv4-mapped form ipaddr.process has
 * already unwrapped): IPv4-compatible `::a.b.c.d` (::/96 but :: and ::1), IPv4-translated `::ffff:0:a.b.c.d`,
 * NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002:AABB:CCDD::/48` and Teredo `2001:0::/32` (its client
 * address, inverted). ipaddr.js calls the IPv4-compatible form `unicast`: without this, `[::7f00:1]` would pass as a
 * global address.
 */
export function embeddedIPv4(address: ipaddr.IPv6): { address: string; form: string } | undefined {
  const w = address.parts;
  const ipv4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => w.slice(from, to).every((x) => x === 0);
  if (zeros(0, 6) && !(w[6] === 0 && (w[7] === 0 || w[7] === 1))) return { address: ipv4(w[6]!, w[7]!), form: 'IPv4-compatible' };
  if (zeros(0, 4) && w[4] === 0xffff && w[5] === 0) return { address: ipv4(w[6]!, w[7]!), form: 'IPv4-translated' };
  if (w[0] === 0x64 && w[1] === 0xff9b && (zeros(2, 6) || w[2] === 1)) return { address: ipv4(w[6]!, w[7]!), form: 'NAT64' };
  if (w[0] === 0x2002) return { address: ipv4(w[1]!, w[2]!), form: '6to4' };
  if (w[0] === 0x2001 && w[1] === 0) return { address: ipv4(w[6]! ^ 0xffff, w[7]! ^ 0xffff), form: 'Teredo' };
  return undefined;
}

/**
 * The URL rules checked before any DNS lookup: https only in production mode; in sandbox mode also http
 * to a loopback host. No credentials in the URL, at most 2048 characters. Returns the parsed URL or the reason.
 */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): { url: URL } | { reason: string } {
  if (raw.length > MAX_URL_LENGTH) return { reason: `the URL is longer than ${MAX_URL_LENGTH} characters` };
  if (!URL.canParse(raw)) return { reason: 'the URL cannot be parsed' };
  const url = new URL(raw);
  if (url.username !== '' || url.password !== '') return { reason: 'the URL must not carry credentials' };
  if (url.hostname === '') return { reason: 'the URL has no host' };
  if (url.protocol === 'https:') return { url };
  if (url.protocol === 'http:' && policy.sandbox && isLoopbackName(url.hostname)) return { url };
  return {
    reason: policy.sandbox ? 'only https URLs, or http to a loopback host in sandbox mode' : 'only https URLs are accepted',
  };
}
