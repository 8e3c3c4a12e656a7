import type { Work } from '../../db/tables.js';
import type { Queue } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { Clock } from '../../lib/clock.js';
import type { DnsResolve } from '../../lib/dns.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { EventStore } from '../events/event.store.js';
import type { EventsService } from '../events/events.service.js';
import type { AuditLog } from '../audit/audit.service.js';
import { createAddressRules } from './address-rules.js';
import { createWebhookDeliveryHandler } from './webhook-delivery.handler.js';
import { createWebhookService, type WebhookService } from './webhook.service.js';
import { createReplayLimits } from './replay-limits.js';
import type { WebhookStore } from './webhook.store.js';
import type { WebhookCaps, WebhookJobPayload, WebhookSender } from './webhook.types.js';

export interface WebhooksModule {
  service: WebhookService;
  /** The delivery worker's job handler. */
  handler: JobHandler<WebhookJobPayload>;
  /** Close the sender's pooled connections (at shutdown). */
  close(): Promise<void>;
}

export interface WebhooksDeps {
  work: Work;
  /** Endpoints and their attempts (this module's tables). */
  store: WebhookStore;
  /** The event log: recover's walk, replay's event, and the bytes each delivery sends. */
  feed: Pick<EventStore, 'cursorOf' | 'readBefore' | 'find' | 'findMany'>;
  clock: Clock;
  logger: Logger;
  queue: Pick<Queue, 'enqueue' | 'enqueueMany' | 'enqueueNew' | 'hurry' | 'cancelGroup' | 'pendingPayloads' | 'countPending' | 'retry' | 'bury' | 'completeAll'>;
  events: Pick<EventsService, 'emit' | 'subscribe'>;
  /** An uncached resolver over MAILROOM_DNS_SERVERS: each check must see the answer the connection will use. */
  resolve: DnsResolve;
  /** MAILROOM_WEBHOOK_ALLOW_CIDRS. */
  allowCidrs: readonly string[];
  sender: WebhookSender;
  backoffBaseMs: number;
  timeoutMs: number;
  /** Concurrency, pending and replay-rate caps (MAILROOM_WEBHOOK_*). */
  caps: WebhookCaps;
  /** Wake this process's worker for a queue (after the enqueuing transaction commits). */
  wake: (queue: string) => void;
  /** Seals endpoint secrets at rest (MAILROOM_SECRET_KEY). */
  box: SecretBox;
  /** Changes to endpoints, by people and by the auto-disable. */
  audit: Pick<AuditLog, 'record'>;
  /** Counts webhook attempts by outcome. */
  metrics?: Pick<Metrics, 'webhookAttempt'>;
}

/** Webhooks: endpoint management, the outbox subscriber that fans events out, and the delivery handler. */
export function createWebhooksModule(deps: WebhooksDeps): WebhooksModule {
  const rules = createAddressRules({ resolve: deps.resolve, allowCidrs: deps.allowCidrs });
  const limits = createReplayLimits(deps.caps, deps.clock, deps.queue);
  const service = createWebhookService({ work: deps.work, store: deps.store, feed: deps.feed, clock: deps.clock, queue: deps.queue, events: deps.events, rules, wake: deps.wake, box: deps.box, limits, audit: deps.audit });
  deps.events.subscribe((trx, event) => service.fanOut(trx, event));
  const handler = createWebhookDeliveryHandler({
    work: deps.work,
    store: deps.store,
    feed: deps.feed,
    clock: deps.clock,
    logger: deps.logger,
    queue: deps.queue,
    rules,
    sender: deps.sender,
    backoffBaseMs: deps.backoffBaseMs,
    timeoutMs: deps.timeoutMs,
    endpointConcurrency: deps.caps.webhookEndpointConcurrency,
    workspaceConcurrency: deps.caps.webhookWorkspaceConcurrency,
    box: deps.box,
    events: deps.events,
    audit: deps.audit,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  return { service, handler, close: () => deps.sender.close() };
}
