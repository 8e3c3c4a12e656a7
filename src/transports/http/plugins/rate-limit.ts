import rateLimit, { normalizeIP, type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The bucket a request counts in once its credential resolved (`key:…`, `ses:…`, `tok:…`); null = its client address. */
    rateLimitKey: string | null;
  }
}

/** The window every request limit counts in. */
export const RATE_WINDOW_MS = 60_000;

/** Run `authenticate` (which resolves the request's credential to its bucket key) under the limit. */
export type CredentialLimit = (request: FastifyRequest, reply: FastifyReply, authenticate: () => Promise<string>) => Promise<void>;

export interface RequestLimits {
  /** For hooks that authenticate: a resolved credential counts in its own bucket, a failed one in its address's. */
  credential: CredentialLimit;
  /** Hook for routes without a credential (login, unknown routes): count in the client address's bucket. */
  address: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

/** Counts one request in a bucket's window wherever the counts are kept (the shared database). */
export type CountRequest = (bucket: string, windowMs: number) => Promise<{ hits: number; resetInMs: number }>;

/** A @fastify/rate-limit store that keeps its counts through `count` instead of in this process's memory. */
function sharedStore(count: CountRequest): FastifyRateLimitStoreCtor {
  return class SharedStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      count(key, timeWindow).then(
        ({ hits, resetInMs }) => callback(null, { current: hits, ttl: resetInMs }),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
      );
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

/** A client's address bucket; IPv6 clients share one per /64, as one host usually holds a whole /64. */
function addressKey(request: FastifyRequest): string {
  return `ip:${normalizeIP(request.ip)}`;
}

/**
 * Requests count per resolved credential (API key id, session id, service token id),
 * never per header text, so no spelling of a header and no invented token opens a fresh bucket;
 * a request whose credential does not resolve counts in its client address's bucket, and once that
 * is full it is answered 429 rather than 401, so guessing costs what calling does.
 * The check runs where the credential is resolved (preParsing), before the body is read.
 */
export async function registerRequestLimits(
  app: FastifyInstance,
  options: { perMinute: number; count?: CountRequest | undefined },
): Promise<RequestLimits> {
  if (options.perMinute <= 0) {
    return { credential: async (_request, _reply, authenticate) => void (await authenticate()), address: async () => undefined };
  }
  app.decorateRequest('rateLimitKey', null);
  await app.register(rateLimit, {
    global: false,
    max: options.perMinute,
    timeWindow: RATE_WINDOW_MS,
    // Without `count`, this process's memory (one process holds every count: the embedded SQLite mode).
    ...(options.count ? { store: sharedStore(options.count) } : {}),
    keyGenerator: (request) => request.rateLimitKey ?? addressKey(request),
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      error: 'rate_limited',
      detail: `more than ${context.max} requests in a minute; retry after ${Math.ceil(context.ttl / 1000)} s`,
    }),
  });
  // Counts the request once (a second call for the same request does nothing) and throws 429 past the limit.
  const check = app.rateLimit();
  return {
    async credential(request, reply, authenticate) {
      let key: string;
      try {
        key = await authenticate();
      } catch (err) {
        await check.call(app, request, reply);
        throw err;
      }
      request.rateLimitKey = key;
      await check.call(app, request, reply);
    },
    async address(request, reply) {
      await check.call(app, request, reply);
    },
  };
}
