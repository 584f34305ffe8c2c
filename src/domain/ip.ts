// IP allow-list matching. Entries are single addresses or CIDR ranges, IPv4 or IPv6; an
// IPv4-mapped IPv6 address (::ffff:10.0.0.1, as Node reports on dual-stack sockets) matches
// the IPv4 entry.
import ipaddr from 'ipaddr.js';

export function isIpOrCidr(value: string): boolean {
  try {
    if (value.includes('/')) ipaddr.parseCIDR(value);
    else ipaddr.parse(value);
    return true;
  } catch {
    return false;
  }
}

function normalise(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed;
}

export function ipAllowed(address: string, allowList: readonly string[]): boolean {
  if (allowList.length === 0) return true;
  const ip = normalise(address);
  if (ip === undefined) return false;
  for (const entry of allowList) {
    if (entry.includes('/')) {
      const [range, bits] = ipaddr.parseCIDR(entry);
      const normalisedRange = normalise(range.toString()) ?? range;
      const prefix = normalisedRange.kind() !== range.kind() ? bits - 96 : bits;
      if (ip.kind() === normalisedRange.kind() && ip.match(normalisedRange, prefix)) return true;
    } else {
      const allowed = normalise(entry);
      if (allowed !== undefined && allowed.kind() === ip.kind() && allowed.toNormalizedString() === ip.toNormalizedString()) {
        return true;
      }
    }
  }
  return false;
}
