import { createAddressPolicy } from '../../lib/address-rules.js';
import type { DnsResolve } from '../../lib/dns.js';
import { RouteError, type MtaStsPolicies, type MtaStsPolicy, type RouteResolver, type SmtpRoute } from './delivery.types.js';

const NO_SUCH_DOMAIN = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);
/** Refused addresses named in one failure reason; the rest are counted (an MX set may be long). */
const MAX_REFUSALS_NAMED = 5;

/**
 * Parse `smtp[s]://[user:pass@]host:port[?tls=insecure]` into a route. With credentials, TLS is required
 * before AUTH and the certificate is verified unless `?tls=insecure`; without them the relay
 * keeps opportunistic STARTTLS.
 */
export function relayRoute(url: string): SmtpRoute {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'smtps:';
  const auth = parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined;
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : secure ? 465 : 587,
    secure,
    auth,
    tls: auth ? { required: true, verify: parsed.searchParams.get('tls') !== 'insecure' } : undefined,
  };
}

/** Whether the relay URL asks to skip certificate checks (start-up warns about it). */
export const relayTlsInsecure = (url: string): boolean => new URL(url).searchParams.get('tls') === 'insecure';

function codeOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err).code) : '';
}

/** The MX hosts by preference (ties shuffled), or the domain itself when it has none (implicit MX). */
async function mailHosts(resolve: DnsResolve, domain: string): Promise<{ hosts: string[]; viaMx: boolean }> {
  let mx: Array<{ exchange: string; priority: number }> = [];
  try {
    mx = (await resolve(domain, 'MX')) as Array<{ exchange: string; priority: number }>;
  } catch (err) {
    if (!NO_SUCH_DOMAIN.has(codeOf(err))) throw new RouteError(`DNS MX lookup of ${domain} failed: ${codeOf(err) || String(err)}`, false);
  }
  if (mx.length === 1 && (mx[0]!.exchange === '' || mx[0]!.exchange === '.')) throw new RouteError(`${domain} publishes a null MX: it accepts no mail`, true);
  if (mx.length === 0) return { hosts: [domain], viaMx: false };
  const hosts = [...mx]
    .map((r) => ({ ...r, tie: Math.random() }))
    .sort((a, b) => a.priority - b.priority || a.tie - b.tie)
    .map((r) => r.exchange.replace(/\.$/, ''));
  return { hosts, viaMx: true };
}

/**
 * The mail hosts an MTA-STS policy lets mail go to, with what it demands of the session: an `enforce` policy keeps only
 * the hosts it lists (none listed: no route, a temporary failure, as the policy may yet be fixed) and requires TLS with
 * a certificate valid for the host (RFC 8461 section 4); `testing` changes nothing but is noted on each attempt.
 */
function underPolicy(domain: string, hosts: string[], policy: MtaStsPolicy | null, policies: MtaStsPolicies | undefined): { hosts: string[]; route: Partial<SmtpRoute> } {
  if (!policy || !policies) return { hosts, route: {} };
  if (policy.mode === 'testing') return { hosts, route: { mtaSts: 'testing' } };
  const listed = hosts.filter((host) => policies.allows(policy, host));
  if (listed.length === 0) {
    throw new RouteError(`MTA-STS policy of ${domain} (enforce) lists none of its mail hosts (${hosts.join(', ')}); it allows ${policy.mx.join(', ')}`, false, 'enforce');
  }
  return { hosts: listed, route: { mtaSts: 'enforce', tls: { required: true, verify: true } } };
}

/**
 * RFC 5321 section 5.1: MX hosts by preference (ties shuffled); no MX at all → the domain's own A/AAAA
 * ("implicit MX"); a null MX (RFC 7505, `0 .`) → the domain takes no mail. All through the service's DNS.
 *
 * Every address found passes the outbound address rules (lib/address-rules.ts) minus
 * `allowCidrs`; a refused one is dropped, and a domain whose every address is refused has no route
 * (a permanent failure naming them). Each route carries the address it was judged by, and the
 * deliverer connects to that address, never to the name again. The domain's MTA-STS policy (`mtaSts`) decides which
 * hosts may take its mail and over what (underPolicy). The operator's relay is exempt from both.
 */
export function createRouteResolver({ resolve, mxPort, relay, allowCidrs = [], mtaSts }: { resolve: DnsResolve; mxPort: number; relay: string | null; allowCidrs?: readonly string[]; mtaSts?: MtaStsPolicies }): RouteResolver {
  const relayed = relay ? relayRoute(relay) : null;
  const policy = createAddressPolicy(allowCidrs, 'MAILROOM_DELIVERY_ALLOW_CIDRS');
  /** The host's addresses, IPv4 first. */
  async function addresses(host: string): Promise<string[]> {
    const found: string[] = [];
    for (const type of ['A', 'AAAA']) {
      try {
        found.push(...((await resolve(host, type)) as string[]));
      } catch (err) {
        if (!NO_SUCH_DOMAIN.has(codeOf(err))) throw new RouteError(`DNS ${type} lookup of ${host} failed: ${codeOf(err) || String(err)}`, false);
      }
    }
    return found;
  }
  return {
    async routes(domain) {
      if (relayed) return [relayed];
      const found = await mailHosts(resolve, domain);
      const { viaMx } = found;
      const { hosts, route } = underPolicy(domain, found.hosts, (await mtaSts?.policy(domain)) ?? null, mtaSts);
      const routes: SmtpRoute[] = [];
      const refused: string[] = [];
      let lookupError: RouteError | null = null;
      for (const host of hosts) {
        try {
          for (const address of await addresses(host)) {
            const reason = policy.refusal(address);
            if (reason === null) routes.push({ host, address, port: mxPort, ...route });
            else refused.push(`${host} resolves to ${address}, ${reason}`);
          }
        } catch (err) {
          lookupError = err as RouteError;
        }
      }
      if (routes.length > 0) return routes;
      // A host whose lookup failed may yet have a permitted address: try again later.
      if (lookupError) throw lookupError;
      if (refused.length > 0) {
        const more = refused.length > MAX_REFUSALS_NAMED ? ` (and ${refused.length - MAX_REFUSALS_NAMED} more)` : '';
        throw new RouteError(`refused by the outbound address rules: ${refused.slice(0, MAX_REFUSALS_NAMED).join('; ')}${more}`, true);
      }
      throw new RouteError(viaMx ? `no MX host of ${domain} has an address` : `${domain} has no MX and no address record`, true);
    },
  };
}
