// IP allow-list matching. Entries are single addresses or CIDR ranges, IPv4 or IPv6; an
// IPv4-mapped IPv6 address (::ffff:10.0.0.1, as Node reports on dual-stack sockets) matches
// the IPv4 entry. Only canonical notations are accepted (node's isIP): ipaddr.js alone would read
// '10' or '010.0.0.1' as some other address.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

function parseAddress(value: string): Address | undefined {
  if (isIP(value) === 0) return undefined;
  const parsed = ipaddr.parse(value);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed;
}

function parseCidr(value: string): [Address, number] | undefined {
  const slash = value.indexOf('/');
  if (slash < 0) return undefined;
  const address = value.slice(0, slash);
  const bitsText = value.slice(slash + 1);
  const family = isIP(address);
  if (family === 0 || !/^\d{1,3}$/.test(bitsText)) return undefined;
  const bits = Number(bitsText);
  if (bits > (family === 4 ? 32 : 128)) return undefined;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(parsed as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [parsed, bits];
}

export function isIpOrCidr(value: string): boolean {
  return value.includes('/') ? parseCidr(value) !== undefined : isIP(value) !== 0;
}

export function ipAllowed(address: string, allowList: readonly string[]): boolean {
  if (allowList.length === 0) return true;
  const ip = parseAddress(address);
  if (ip === undefined) return false;
  return allowList.some((entry) => {
    if (entry.includes('/')) {
      const cidr = parseCidr(entry);
      return cidr !== undefined && cidr[0].kind() === ip.kind() && ip.match(cidr[0], cidr[1]);
    }
    const allowed = parseAddress(entry);
    return allowed !== undefined && allowed.kind() === ip.kind() && allowed.toNormalizedString() === ip.toNormalizedString();
  });
}
