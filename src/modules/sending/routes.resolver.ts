import type { DnsResolve } from '../../lib/dns.js';
import { RouteError, type RouteResolver, type SmtpRoute } from './delivery.types.js';

const NO_SUCH_DOMAIN = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** Parse `smtp://[user:pass@]host:port` (or smtps://) into a route. */
export function relayRoute(url: string): SmtpRoute {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'smtps:';
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : secure ? 465 : 587,
    secure,
    auth: parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined,
  };
}

function codeOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err).code) : '';
}

/**
 * RFC 5321 §5.1: MX hosts by preference (ties shuffled); no MX at all → the domain's own A/AAAA
 * ("implicit MX"); a null MX (RFC 7505, `0 .`) → the domain takes no mail. All through the service's DNS.
 */
export function createRouteResolver({ resolve, mxPort, relay }: { resolve: DnsResolve; mxPort: number; relay: string | null }): RouteResolver {
  const relayed = relay ? relayRoute(relay) : null;
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
      let mx: Array<{ exchange: string; priority: number }> = [];
      try {
        mx = (await resolve(domain, 'MX')) as Array<{ exchange: string; priority: number }>;
      } catch (err) {
        if (!NO_SUCH_DOMAIN.has(codeOf(err))) throw new RouteError(`DNS MX lookup of ${domain} failed: ${codeOf(err) || String(err)}`, false);
      }
      if (mx.length === 1 && (mx[0]!.exchange === '' || mx[0]!.exchange === '.')) throw new RouteError(`${domain} publishes a null MX: it accepts no mail`, true);
      const hosts =
        mx.length > 0
          ? [...mx]
              .map((r) => ({ ...r, tie: Math.random() }))
              .sort((a, b) => a.priority - b.priority || a.tie - b.tie)
              .map((r) => r.exchange.replace(/\.$/, ''))
          : [domain];
      const routes: SmtpRoute[] = [];
      let lookupError: RouteError | null = null;
      for (const host of hosts) {
        try {
          for (const address of await addresses(host)) routes.push({ host, address, port: mxPort });
        } catch (err) {
          lookupError = err as RouteError;
        }
      }
      if (routes.length > 0) return routes;
      if (lookupError) throw lookupError;
      throw new RouteError(mx.length > 0 ? `no MX host of ${domain} has an address` : `${domain} has no MX and no address record`, true);
    },
  };
}
