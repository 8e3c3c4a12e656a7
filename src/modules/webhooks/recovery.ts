import type { Work } from '../../db/tables.js';
import type { Queue } from '../../jobs/queue.js';
import type { EventStore } from '../events/event.store.js';
import type { FeedCursor, PastRow } from '../events/event.types.js';
import type { WebhookTable } from './webhook.table.js';
import type { WebhookStore } from './webhook.store.js';
import { filterTakes } from './webhook.service.js';
import { RECOVER_SCAN_LIMIT, WEBHOOK_QUEUE, type WebhookJobPayload } from './webhook.types.js';

/** What the walk reads: the event log backward, the endpoint's attempts and its pending deliveries. */
export interface RecoveryDeps {
  feed: Pick<EventStore, 'readBefore'>;
  store: Pick<WebhookStore, 'received'>;
  queue: Pick<Queue, 'pendingPayloads'>;
}

/** Events read per query of the backward walk. */
const PAGE = 500;
/**
 * How far before `since` the walk goes on: stream order is commit order, and an event's `created_at` is when it was
 * emitted, so an event committed after an older one may have been emitted slightly before it.
 */
const ORDER_SLACK_MS = 60_000;
/** The start of a synthetic test event's data (webhook.service `test`): it was meant for one endpoint, once. */
const TEST_EVENT_MARK = '"data":{"test":true,"webhook_id":';

/** Whether an event's stored JSON is a synthetic test event made for this endpoint (replay lets it through any filter). */
export function isTestEventFor(payload: string, webhookId: string): boolean {
  return payload.includes(`${TEST_EVENT_MARK}${JSON.stringify(webhookId)}`);
}

/** The events of a page the endpoint should have had: since `from`, of a type its filter takes, not a test. */
function wanted(rows: readonly PastRow[], endpoint: Pick<WebhookTable, 'event_types'>, from: number): PastRow[] {
  return rows.filter((r) => r.created_at >= from && filterTakes(endpoint.event_types, r.type) && !r.head.includes(TEST_EVENT_MARK));
}

/**
 * The events since `from` (walking back from `start`, or from the newest) that the endpoint missed: wanted, never
 * received, and not waiting in a pending job. Oldest first, so a receiver gets them in the order they happened.
 * At most RECOVER_SCAN_LIMIT events are examined; `nextBefore` then names the oldest one, to continue from.
 */
export async function missedEvents(
  work: Work,
  { feed, store, queue }: RecoveryDeps,
  endpoint: Pick<WebhookTable, 'id' | 'workspace_id' | 'event_types'>,
  from: number,
  start: FeedCursor | null,
): Promise<{ missed: string[]; nextBefore: string | null }> {
  // The events the endpoint has a delivery job waiting for (leased ones included; not the dead).
  const payloads = await queue.pendingPayloads<WebhookJobPayload>(work, WEBHOOK_QUEUE, endpoint.workspace_id, endpoint.id);
  const pending = new Set(payloads.map((p) => p.event_id));
  const missed: string[] = [];
  let cursor = start;
  let examined = 0;
  for (;;) {
    const rows = await feed.readBefore(work, endpoint.workspace_id, cursor, Math.min(PAGE, RECOVER_SCAN_LIMIT - examined));
    if (rows.length === 0) return { missed: missed.reverse(), nextBefore: null };
    examined += rows.length;
    const candidates = wanted(rows, endpoint, from).filter((r) => !pending.has(r.id));
    const received = await store.received(work, endpoint.workspace_id, endpoint.id, candidates.map((r) => r.id));
    missed.push(...candidates.filter((r) => !received.has(r.id)).map((r) => r.id));
    const last = rows[rows.length - 1]!;
    if (last.created_at < from - ORDER_SLACK_MS) return { missed: missed.reverse(), nextBefore: null };
    if (examined >= RECOVER_SCAN_LIMIT) return { missed: missed.reverse(), nextBefore: last.id };
    cursor = last.cursor;
  }
}
