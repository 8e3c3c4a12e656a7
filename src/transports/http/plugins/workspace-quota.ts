import type { FastifyRequest } from 'fastify';
import { quotaExceeded } from '../../../modules/quotas/quota.types.js';
import { RATE_WINDOW_MS, type CountRequest } from './rate-limit.js';

/** Most buckets the in-process counter keeps at once (it starts over past this: a minute's counts forgiven). */
const MEMORY_BUCKETS = 100_000;

/** The workspace a request acts in, once its credential resolved: the key's, the session's active one, the token's. */
function workspaceOf(request: FastifyRequest): string | null {
  return request.tenantContext?.workspaceId ?? request.sessionContext?.activeWorkspaceId ?? request.serviceTokenContext?.workspaceId ?? null;
}

/**
 * Requests counted in this process's memory, per bucket and window: for the embedded SQLite mode, where one
 * process serves every request (as the per-credential limit does then).
 */
export function memoryCounter(now: () => number = Date.now): CountRequest {
  const counts = new Map<string, { windowStart: number; hits: number }>();
  return async (bucket, windowMs) => {
    const at = now();
    const windowStart = at - (at % windowMs);
    let entry = counts.get(bucket);
    if (!entry || entry.windowStart !== windowStart) {
      if (counts.size >= MEMORY_BUCKETS) counts.clear();
      entry = { windowStart, hits: 0 };
      counts.set(bucket, entry);
    }
    entry.hits += 1;
    return { hits: entry.hits, resetInMs: windowStart + windowMs - at };
  };
}

/**
 * preParsing hook after a surface's credential hook: the workspace's `api_requests_per_minute` quota, counted per
 * workspace (every credential of it together) through `count`: the rate limit's own counters (`request_counts`
 * in the shared database, bucket `ws:<id>`), or this process's memory. A workspace without the quota costs a
 * lookup of its limits, which the quota service keeps for a few seconds.
 */
export function workspaceRequestQuota(deps: { limitOf: (workspaceId: string) => Promise<number | null>; count: CountRequest }) {
  return async <P>(request: FastifyRequest, _reply: unknown, payload: P): Promise<P> => {
    const workspaceId = workspaceOf(request);
    if (workspaceId === null) return payload;
    const limit = await deps.limitOf(workspaceId);
    if (limit === null) return payload;
    const { hits, resetInMs } = await deps.count(`ws:${workspaceId}`, RATE_WINDOW_MS);
    if (hits > limit) {
      throw quotaExceeded('api_requests_per_minute', `this workspace may make ${limit} API requests a minute`, Math.max(1, Math.ceil(resetInMs / 1000)));
    }
    return payload;
  };
}
