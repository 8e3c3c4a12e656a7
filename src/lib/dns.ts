import { Resolver } from 'node:dns/promises';

/** `resolve(name, rrtype)` with the same answers and error codes as `dns.promises.resolve`. */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown>;

/** Per-query time-out: DNS must never hold an SMTP transaction for long. */
export const DNS_TIMEOUT_MS = 3000;

/**
 * A resolver over the given servers (`ip[:port]`, `[ipv6]:port`), or the system's when the list is
 * empty. Every lookup of the service goes through one of these (MAILROOM_DNS_SERVERS).
 */
export function createDnsResolver(servers: readonly string[], timeoutMs = DNS_TIMEOUT_MS): DnsResolve {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return (name, rrtype) => resolver.resolve(name, rrtype as 'TXT');
}
