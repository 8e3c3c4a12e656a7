import type { LookupAddress, LookupOptions } from 'node:dns';
import { Agent, request } from 'undici';
import { MAX_ENDPOINT_CONCURRENCY, MAX_RESPONSE_BYTES, type WebhookRequest, type WebhookResponse, type WebhookSender } from '../../modules/webhooks/webhook.types.js';

/** Connection pools kept (one per origin and pinned address); the least recently used is closed beyond this. */
const MAX_POOLS = 256;
/** How long an idle kept-alive connection to a receiver stays open. */
const KEEP_ALIVE_MS = 4000;
/**
 * Connections per pool: as many as the workers may run deliveries to one endpoint, so that none waits for a
 * connection behind a request that hangs.
 */
const CONNECTIONS_PER_POOL = MAX_ENDPOINT_CONCURRENCY;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A connection pool whose every connection goes to one address: the lookup hands back only the
 * address the rules accepted, so a DNS answer that changed since (rebinding) is never used. The URL
 * keeps its host name, so TLS still sends it (SNI) and verifies the certificate against it.
 */
function pinnedAgent(address: string, family: 4 | 6): Agent {
  const lookup = (_hostname: string, options: LookupOptions, callback: LookupCallback) => {
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  return new Agent({
    connect: { lookup },
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MS,
    connections: CONNECTIONS_PER_POOL,
  });
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${typeof code === 'string' ? `${code} ` : ''}${err.message}${cause}`.trim();
  }
  return String(err);
}

/**
 * The webhook HTTP client (undici): POST over a connection pinned to the validated address, no
 * redirect followed (undici follows none unless told to), at most MAX_RESPONSE_BYTES of the answer read.
 */
export function createWebhookClient(): WebhookSender {
  const pools = new Map<string, Agent>();

  function pool(url: URL, address: string, family: 4 | 6): Agent {
    const key = `${url.origin}|${address}`;
    let agent = pools.get(key);
    if (agent) {
      pools.delete(key); // refresh recency (Map order is insertion order)
    } else {
      agent = pinnedAgent(address, family);
      if (pools.size >= MAX_POOLS) {
        const [oldestKey, oldest] = pools.entries().next().value!;
        pools.delete(oldestKey);
        void oldest.close().catch(() => undefined);
      }
    }
    pools.set(key, agent);
    return agent;
  }

  return {
    async send(req: WebhookRequest): Promise<WebhookResponse> {
      try {
        const res = await request(req.url, {
          method: 'POST',
          headers: req.headers,
          body: req.body,
          dispatcher: pool(req.url, req.address, req.family),
          signal: req.signal,
        });
        const chunks: Buffer[] = [];
        let read = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          const room = MAX_RESPONSE_BYTES - read;
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
          read += Math.min(chunk.length, room);
          if (read >= MAX_RESPONSE_BYTES) {
            // Enough: the rest is not read (the connection is closed rather than drained).
            res.body.destroy();
            break;
          }
        }
        const retryAfter = res.headers['retry-after'];
        return {
          type: 'response',
          statusCode: res.statusCode,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
          body: Buffer.concat(chunks).toString('utf8'),
        };
      } catch (err) {
        if (req.signal.aborted) return { type: 'error', error: describe(req.signal.reason) };
        return { type: 'error', error: describe(err) };
      }
    },
    async close() {
      const agents = [...pools.values()];
      pools.clear();
      await Promise.all(agents.map((agent) => agent.close().catch(() => undefined)));
    },
  };
}
