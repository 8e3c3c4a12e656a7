import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { DnsResolve } from '../../lib/dns.js';

/** Longest webhook URL accepted (browsers' and proxies' practical limit). */
export const MAX_URL_LENGTH = 2048;

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

/** A webhook URL the address rules refused; `message` says why and names the refused address. */
export class WebhookUrlRefused extends Error {
  constructor(
    message: string,
    /** The refused address, when an address (not the URL's form) was the problem. */
    readonly address: string | null = null,
  ) {
    super(message);
    this.name = 'WebhookUrlRefused';
  }
}

/** A URL that passed the rules, with the addresses it may be reached at (each one checked). */
export interface CheckedUrl {
  url: URL;
  /** Host name for TLS and the Host header; an IP literal without brackets when the URL names one. */
  host: string;
  addresses: Array<{ address: string; family: 4 | 6 }>;
}

export interface AddressRules {
  /** Check a URL's form and every address its host has now (DNS through MAILROOM_DNS_SERVERS, no cache). */
  check(rawUrl: string, signal?: AbortSignal): Promise<CheckedUrl>;
}

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
/** Global unicast space (RFC 4291 §2.4): anything outside it is not a public destination. */
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

/** Parse MAILROOM_WEBHOOK_ALLOW_CIDRS entries; throws on one ipaddr.js cannot read. */
export function parseAllowList(cidrs: readonly string[]): Array<[Ip, number]> {
  return cidrs.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr);
    } catch {
      throw new Error(`MAILROOM_WEBHOOK_ALLOW_CIDRS: '${cidr}' is not a CIDR`);
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

/** `localhost` and names under it are loopback by definition (RFC 6761 §6.3), whatever DNS says. */
const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** The form rules: an absolute http(s) URL without credentials, within the length limit. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new WebhookUrlRefused(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlRefused(`'${raw}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WebhookUrlRefused(`the scheme must be http or https, not ${url.protocol.replace(/:$/, '')}`);
  if (url.username !== '' || url.password !== '') throw new WebhookUrlRefused('the URL must not carry credentials (user:password@)');
  if (url.hostname === '') throw new WebhookUrlRefused('the URL has no host');
  return url;
}

const DNS_ERRORS_MEANING_NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND', 'NOTFOUND', 'ENONAME']);

/**
 * The webhook address rules (specification §6): http(s) only, no credentials, and every address the
 * host has — each DNS answer, A and AAAA, or the IP literal — must be global unicast, unless
 * MAILROOM_WEBHOOK_ALLOW_CIDRS exempts it. The URL parser (WHATWG) has already turned decimal, octal
 * and hexadecimal IPv4 forms (`http://2130706433/`, `http://0x7f.1/`) into dotted quads.
 */
export function createAddressRules({ resolve, allowCidrs }: { resolve: DnsResolve; allowCidrs: readonly string[] }): AddressRules {
  const allowList = parseAllowList(allowCidrs);

  function judge(host: string, address: string, viaDns: boolean): void {
    if (allowed(address, allowList)) return;
    const reason = refusalReason(address);
    if (reason === null) return;
    throw new WebhookUrlRefused(viaDns ? `${host} resolves to ${address}, ${reason}` : `${address} is ${reason}`, address);
  }

  async function lookup(host: string, signal: AbortSignal | undefined): Promise<Array<{ address: string; family: 4 | 6 }>> {
    const name = host.replace(/\.$/, '');
    const one = async (rrtype: 'A' | 'AAAA'): Promise<string[]> => {
      try {
        const answer = await resolve(name, rrtype);
        return Array.isArray(answer) ? answer.filter((a): a is string => typeof a === 'string') : [];
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (typeof code === 'string' && DNS_ERRORS_MEANING_NO_RECORDS.has(code)) return [];
        throw new WebhookUrlRefused(`the DNS lookup of ${name} failed (${typeof code === 'string' ? code : String(err)})`);
      }
    };
    const lookups = Promise.all([one('A'), one('AAAA')]);
    const [a, aaaa] = signal ? await raceAbort(lookups, signal) : await lookups;
    return [...a.map((address) => ({ address, family: 4 as const })), ...aaaa.map((address) => ({ address, family: 6 as const }))];
  }

  return {
    async check(rawUrl, signal) {
      const url = parseWebhookUrl(rawUrl);
      const hostname = url.hostname;
      const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
      if (isIPv4(literal) || isIPv6(literal)) {
        judge(literal, literal, false);
        return { url, host: literal, addresses: [{ address: literal, family: isIPv4(literal) ? 4 : 6 }] };
      }
      const addresses = isLocalhostName(hostname)
        ? [{ address: '127.0.0.1', family: 4 as const }, { address: '::1', family: 6 as const }]
        : await lookup(hostname, signal);
      if (addresses.length === 0) throw new WebhookUrlRefused(`${hostname} does not resolve to any address`);
      // Every answer must pass: a client may connect to any of them, and an attacker controls which.
      for (const { address } of addresses) judge(hostname, address, true);
      return { url, host: hostname, addresses };
    },
  };
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: Error) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
