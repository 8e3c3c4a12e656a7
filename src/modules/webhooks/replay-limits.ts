import type { Work } from '../../db/tables.js';
import type { Queue } from '../../jobs/queue.js';
import type { Clock } from '../../lib/clock.js';
import { rateLimited } from '../../lib/errors.js';
import { WEBHOOK_QUEUE, type WebhookCaps } from './webhook.types.js';

/** What a full backlog tells the caller to wait: long enough for a share of it to drain, or to be retried. */
const BACKLOG_RETRY_AFTER_S = 60;
/** Workspaces whose buckets are kept at most; full buckets are dropped first (they hold nothing to remember). */
const MAX_BUCKETS = 10_000;

export interface ReplayLimits {
  /** Take one call of the workspace's replay rate, or throw 429 `too_many_replays` with the wait. */
  take(workspaceId: string): void;
  /** Throw 429 `webhook_backlog_full` when adding `adding` deliveries would pass the endpoint's or the workspace's pending cap. */
  checkBacklog(work: Work, workspaceId: string, webhookId: string, adding: number): Promise<void>;
}

/**
 * The limits on work a workspace asks for by hand (replay, recover, test): a token bucket per workspace (the
 * per-minute rate, refilled evenly, a minute's worth at once at most), and caps on the deliveries already pending.
 * Events fanned out as they happen are never refused: those caps apply to these calls only.
 */
export function createReplayLimits(caps: WebhookCaps, clock: Clock, queue: Pick<Queue, 'countPending'>): ReplayLimits {
  const perMs = caps.webhookReplaysPerMinute / 60_000;
  const buckets = new Map<string, { tokens: number; at: number }>();

  function level(workspaceId: string, now: number): { tokens: number; at: number } {
    const bucket = buckets.get(workspaceId) ?? { tokens: caps.webhookReplaysPerMinute, at: now };
    bucket.tokens = Math.min(caps.webhookReplaysPerMinute, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    return bucket;
  }

  function prune(now: number): void {
    if (buckets.size < MAX_BUCKETS) return;
    for (const [key] of buckets) if (level(key, now).tokens >= caps.webhookReplaysPerMinute) buckets.delete(key);
  }

  return {
    take(workspaceId) {
      const now = clock.now();
      prune(now);
      const bucket = level(workspaceId, now);
      buckets.set(workspaceId, bucket);
      if (bucket.tokens < 1) {
        const wait = Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
        throw rateLimited('too_many_replays', `at most ${caps.webhookReplaysPerMinute} replay, recover and test calls per minute per workspace; try again in ${wait} s`, wait);
      }
      bucket.tokens -= 1;
    },

    async checkBacklog(work, workspaceId, webhookId, adding) {
      // Pending webhook deliveries (leased ones included, not the dead) of the endpoint, then of the workspace.
      const endpoint = await queue.countPending(work, WEBHOOK_QUEUE, workspaceId, webhookId);
      if (endpoint + adding > caps.webhookEndpointPendingMax) {
        throw rateLimited(
          'webhook_backlog_full',
          `webhook ${webhookId} has ${endpoint} deliveries pending; at most ${caps.webhookEndpointPendingMax} may be, so ${adding} more cannot be queued now`,
          BACKLOG_RETRY_AFTER_S,
        );
      }
      const workspace = await queue.countPending(work, WEBHOOK_QUEUE, workspaceId);
      if (workspace + adding > caps.webhookWorkspacePendingMax) {
        throw rateLimited(
          'webhook_backlog_full',
          `this workspace has ${workspace} webhook deliveries pending; at most ${caps.webhookWorkspacePendingMax} may be, so ${adding} more cannot be queued now`,
          BACKLOG_RETRY_AFTER_S,
        );
      }
    },
  };
}
