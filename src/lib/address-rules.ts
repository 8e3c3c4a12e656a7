import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The address rules: which IP addresses the service may connect to on a tenant's
 * behalf. One implementation for webhook URLs (modules/webhooks/address-rules.ts) and for direct
 * outbound delivery (modules/sending/routes.resolver.ts); each feature has its own allow list.
 */

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

/** What ipaddr.js calls a range, as a phrase after "is". */
const RANGE_NAMES: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  as112: 'an AS112 address',
  amt: 'an AMT relay address',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  deprecatedSiteLocal: 'a site-local address (fec0::/10)',
  discard: 'a discard-only address (100::/64)',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address (2002::/16)',
  teredo: 'a Teredo address (2001::/32)',
  as112v6: 'an AS112 address',
  deprecatedOrchid: 'an ORCHID address',
  orchid2: 'an ORCHIDv2 address',
  droneRemoteIdProtocolEntityTags: 'a DRIP entity tag',
  segmentRouting: 'a segment-routing SID (5f00::/16)',
};

/** Ranges ipaddr.js files under "reserved", named more precisely (RFC 6890, the IANA special-purpose registries). */
const IPV4_SPECIAL: Array<[string, string]> = [
  ['192.0.0.0/24', 'an IETF protocol assignment (192.0.0.0/24)'],
  ['192.0.2.0/24', 'a documentation address (192.0.2.0/24)'],
  ['198.51.100.0/24', 'a documentation address (198.51.100.0/24)'],
  ['203.0.113.0/24', 'a documentation address (203.0.113.0/24)'],
  ['198.18.0.0/15', 'a benchmarking address (198.18.0.0/15)'],
  ['192.88.99.0/24', 'a 6to4 relay anycast address (192.88.99.0/24)'],
  ['240.0.0.0/4', 'a reserved address (240.0.0.0/4)'],
];
const IPV6_SPECIAL: Array<[string, string]> = [
  ['2001:db8::/32', 'a documentation address (2001:db8::/32)'],
  ['3fff::/20', 'a documentation address (3fff::/20)'],
  ['2001:2::/48', 'a benchmarking address (2001:2::/48)'],
  ['2001::/23', 'an IETF protocol assignment (2001::/23)'],
];
const parsedSpecial = <T extends Ip>(list: Array<[string, string]>) => list.map(([cidr, name]) => ({ range: ipaddr.parseCIDR(cidr) as [T, number], name }));
const IPV4_RANGES = parsedSpecial<ipaddr.IPv4>(IPV4_SPECIAL);
const IPV6_RANGES = parsedSpecial<ipaddr.IPv6>(IPV6_SPECIAL);
/** Global unicast space (RFC 4291 section 2.4): anything outside it is not a public destination. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

/**
 * Parse an address, IPv4-mapped IPv6 unwrapped to the IPv4 address it carries. IPv6 goes through the
 * URL parser's canonical form first: ipaddr.js reads a dotted tail (`::127.0.0.1`, IPv4-compatible)
 * as if it were IPv4-mapped.
 */
function parseIp(address: string): Ip | null {
  if (isIPv4(address)) return ipaddr.parse(address);
  if (!isIPv6(address)) return null;
  return unwrap(ipaddr.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1)));
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries. */
function unwrap(ip: Ip): Ip {
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/**
 * Why an address is no public destination, or null when it is global unicast. IPv4-mapped IPv6
 * addresses are judged as the IPv4 address they carry.
 */
export function refusalReason(address: string): string | null {
  const ip = parseIp(address);
  if (!ip) return 'not an IP address';
  if (ip.kind() === 'ipv4') {
    const v4 = ip as ipaddr.IPv4;
    const range = v4.range();
    if (range === 'reserved') for (const { range: cidr, name } of IPV4_RANGES) if (v4.match(cidr)) return name;
    return range === 'unicast' ? null : (RANGE_NAMES[range] ?? `a special-purpose address (${range})`);
  }
  const v6 = ip as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'reserved') for (const { range: cidr, name } of IPV6_RANGES) if (v6.match(cidr)) return name;
  if (range !== 'unicast') return RANGE_NAMES[range] ?? `a special-purpose address (${range})`;
  if (v6.match(IPV4_COMPATIBLE)) return 'an IPv4-compatible address (::/96)';
  if (!v6.match(GLOBAL_UNICAST)) return 'not a global unicast address (outside 2000::/3)';
  return null;
}

/** Parse an allow list's entries (`variable` names it in the error); throws on one ipaddr.js cannot read. */
export function parseAllowList(cidrs: readonly string[], variable: string): Array<[Ip, number]> {
  return cidrs.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr);
    } catch {
      throw new Error(`${variable}: '${cidr}' is not a CIDR`);
    }
  });
}

function allowed(address: string, allowList: ReadonlyArray<[Ip, number]>): boolean {
  if (allowList.length === 0) return false;
  const ip = parseIp(address);
  if (!ip) return false;
  // An IPv4-mapped address matches both the IPv4 and the ::ffff: form of a CIDR.
  const candidates = ip.kind() === 'ipv4' ? [ip, (ip as ipaddr.IPv4).toIPv4MappedAddress()] : [ip];
  return allowList.some(([network, bits]) => candidates.some((ip) => ip.kind() === network.kind() && ip.match(network, bits)));
}

/** The rules with one feature's allow list applied. */
export interface AddressPolicy {
  /** Why `address` may not be connected to, or null when it may (global unicast, or in the allow list). */
  refusal(address: string): string | null;
}

/** `allowCidrs` exempt networks from the rules (the operator's escape hatch); `variable` names them in errors. */
export function createAddressPolicy(allowCidrs: readonly string[], variable: string): AddressPolicy {
  const allowList = parseAllowList(allowCidrs, variable);
  return { refusal: (address) => (allowed(address, allowList) ? null : refusalReason(address)) };
}
