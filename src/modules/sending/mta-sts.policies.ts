import { parsePolicy, resolvePolicy, validateMx } from 'mailauth/lib/mta-sts.js';
import type { DNSResolver } from 'mailauth';
import type { Clock } from '../../lib/clock.js';
import type { DnsResolve } from '../../lib/dns.js';
import type { Logger } from '../../lib/logger.js';
import type { MtaStsPolicies, MtaStsPolicy } from './delivery.types.js';

/** Policies (and remembered fetch failures) kept per process; the oldest is dropped beyond this. */
const MAX_CACHED_DOMAINS = 10_000;
/**
 * A policy whose fetch failed, with none cached, is tried again after this long rather than on every message
 * (RFC 8461 section 3.3 suggests at least five minutes per policy id): each try can cost a delivery the fetch's time-out.
 */
const FETCH_RETRY_MS = 5 * 60_000;

/** Fetches `https://mta-sts.<domain>/.well-known/mta-sts.txt` (the HTTP transport); throws on any failure. */
export type MtaStsFetch = (domain: string) => Promise<string>;

interface Cached {
  /** The TXT record's id the policy was fetched for. */
  id: string;
  /** Null: a policy of mode `none`. */
  policy: MtaStsPolicy | null;
  expires: number;
}

/** A bounded map whose oldest entry goes first. */
function remember<T>(map: Map<string, T>, key: string, value: T): void {
  map.delete(key);
  if (map.size >= MAX_CACHED_DOMAINS) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/**
 * Recipient domains' MTA-STS policies (RFC 8461) through mailauth's record lookup, policy parser and MX matching,
 * kept in memory per process until their max_age: the TXT id is looked up (through the service's caching DNS) on
 * each use, and a changed id or an expired policy fetches again. A fetch that fails keeps a cached policy in force
 * and, with none, means no policy (section 5.1); a domain's concurrent lookups share one fetch.
 */
export function createMtaStsPolicies({ resolve, fetchPolicy, clock, logger }: { resolve: DnsResolve; fetchPolicy: MtaStsFetch; clock: Clock; logger: Logger }): MtaStsPolicies {
  const cache = new Map<string, Cached>();
  const failed = new Map<string, { id: string; until: number }>();
  const inFlight = new Map<string, Promise<MtaStsPolicy | null>>();
  // mailauth's resolver type is Node's; ours answers the same (dns.promises.resolve's shapes and error codes).
  const resolver = resolve as DNSResolver;

  async function fetchFor(domain: string, id: string, cached: Cached | undefined): Promise<MtaStsPolicy | null> {
    const miss = failed.get(domain);
    if (miss && miss.id === id && miss.until > clock.now()) return cached?.policy ?? null;
    try {
      const parsed = parsePolicy(await fetchPolicy(domain));
      const policy = parsed.mode === 'none' ? null : { mode: parsed.mode, mx: parsed.mx ?? [] };
      remember(cache, domain, { id, policy, expires: clock.now() + (parsed.maxAge ?? 0) * 1000 });
      failed.delete(domain);
      return policy;
    } catch (err) {
      logger.warn({ domain, err: err instanceof Error ? err.message : String(err) }, 'MTA-STS policy fetch failed; using the cached policy, or none');
      remember(failed, domain, { id, until: clock.now() + FETCH_RETRY_MS });
      return cached?.policy ?? null;
    }
  }

  async function lookup(domain: string): Promise<MtaStsPolicy | null> {
    const entry = cache.get(domain);
    const cached = entry && entry.expires > clock.now() ? entry : undefined;
    let id: string | false;
    try {
      id = await resolvePolicy(domain, { resolver });
    } catch {
      // DNS failed: an attacker who can block the TXT lookup must not switch a cached policy off.
      return cached?.policy ?? null;
    }
    if (id === false || cached?.id === id) return cached?.policy ?? null;
    return fetchFor(domain, id, cached);
  }

  return {
    policy(domain) {
      const key = domain.toLowerCase();
      const pending = inFlight.get(key);
      if (pending) return pending;
      const found = lookup(key).finally(() => inFlight.delete(key));
      inFlight.set(key, found);
      return found;
    },
    allows: (policy, host) => validateMx(host, { mode: policy.mode, mx: policy.mx }).valid,
  };
}
