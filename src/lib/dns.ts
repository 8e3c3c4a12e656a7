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

/** How long answers (and failures) are reused by a caching resolver. */
export const DNS_CACHE_TTL_MS = 60_000;
export const DNS_NEGATIVE_TTL_MS = 30_000;
const DNS_CACHE_ENTRIES = 10_000;

/**
 * A small in-process cache in front of a resolver, for lookups repeated per message (SPF, DKIM and
 * DMARC of busy senders). Node's resolver does not report record TTLs for TXT, so a fixed short TTL is
 * used. Not for lookups whose answer must be fresh (domain verification, webhook address checks).
 */
export function cachingResolver(resolve: DnsResolve, ttlMs = DNS_CACHE_TTL_MS, negativeTtlMs = DNS_NEGATIVE_TTL_MS, now: () => number = Date.now): DnsResolve {
  const cache = new Map<string, { expires: number; answer: Promise<unknown> }>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && hit.expires > now()) return hit.answer;
    const answer = resolve(name, rrtype);
    const entry = { expires: now() + ttlMs, answer };
    if (cache.size >= DNS_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(key, entry);
    answer.catch(() => {
      entry.expires = now() + negativeTtlMs;
    });
    return answer;
  };
}
