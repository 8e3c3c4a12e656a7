import type { Work } from '../../db/tables.js';
import type { Queue } from '../../jobs/queue.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import type { EventsService } from '../events/events.service.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { SYSTEM } from '../tenancy/tenancy.types.js';
import type { WebhookDeliveryTable, WebhookTable } from './webhook.table.js';
import type { WebhookStore } from './webhook.store.js';
import { toWebhookView } from './webhook.service.js';
import { AUTO_DISABLE_MS, WEBHOOK_QUEUE } from './webhook.types.js';

export interface OutcomeDeps {
  clock: Clock;
  queue: Pick<Queue, 'cancelGroup'>;
  events: Pick<EventsService, 'emit'>;
  /** An endpoint disabled here is recorded with actor `system`. */
  audit: Pick<AuditLog, 'record'>;
  store: Pick<WebhookStore, 'deactivate' | 'clearFailing' | 'markFailing' | 'disableFailing' | 'setDisabledReason'>;
}

/** What one batch of attempts says about one endpoint. */
interface EndpointOutcome {
  workspaceId: string;
  webhookId: string;
  /** The latest successful attempt's start, if any. */
  lastSuccess: number | null;
  /** The earliest failed attempt after that, if any, and the latest failure's error. */
  firstFailure: number | null;
  lastError: string | null;
}

function outcomesOf(attempts: readonly WebhookDeliveryTable[]): EndpointOutcome[] {
  const byEndpoint = new Map<string, EndpointOutcome>();
  for (const a of [...attempts].sort((x, y) => x.delivered_at - y.delivered_at)) {
    const key = `${a.workspace_id} ${a.webhook_id}`;
    const o = byEndpoint.get(key) ?? { workspaceId: a.workspace_id, webhookId: a.webhook_id, lastSuccess: null, firstFailure: null, lastError: null };
    if (a.success === 1) Object.assign(o, { lastSuccess: a.delivered_at, firstFailure: null, lastError: null });
    else Object.assign(o, { firstFailure: o.firstFailure ?? a.delivered_at, lastError: a.error });
    byEndpoint.set(key, o);
  }
  // One lock order for every batch (PostgreSQL row locks on the endpoints), whichever attempts it holds.
  return [...byEndpoint.values()].sort((a, b) => a.webhookId.localeCompare(b.webhookId));
}

export const disabledReason = (since: number, lastError: string | null) =>
  `every delivery attempt failed for ${AUTO_DISABLE_MS / 86_400_000} days (since ${iso(since)}); last error: ${lastError ?? 'unknown'}`;

/**
 * What a batch of attempts does to its endpoints, in the transaction that records it. `gone`: attempts answered 410,
 * whose endpoints are disabled at once. The others: a success clears the endpoint's `failing_since`, a
 * failure sets it unless set, and a failure when it is AUTO_DISABLE_MS old or more disables the endpoint. A disabled
 * endpoint becomes inactive with `disabled_at` and `disabled_reason`, its pending retries are dropped, and
 * `webhook.disabled` is emitted. The database row is the one truth, so workers in any number of processes agree.
 * Endpoints are changed first and events emitted after, so that the fan-out of those events (which reads the active
 * endpoints once per transaction) sees every endpoint this batch disabled as inactive.
 */
export async function recordOutcomes(trx: Work, attempts: readonly WebhookDeliveryTable[], gone: readonly WebhookDeliveryTable[], { clock, queue, events, audit, store: repo }: OutcomeDeps): Promise<void> {
  const outcomes = outcomesOf(attempts);
  const now = clock.now();
  const disabled: WebhookTable[] = [];
  // 410 Gone: the receiver says the endpoint no longer exists.
  for (const a of gone) {
    const row = await repo.deactivate(trx, a.workspace_id, a.webhook_id, now, `the endpoint answered HTTP 410 Gone to event ${a.event_id}`);
    await queue.cancelGroup(trx, WEBHOOK_QUEUE, a.webhook_id);
    if (row) disabled.push(row);
  }
  await repo.clearFailing(trx, outcomes.filter((o) => o.firstFailure === null));
  for (const o of outcomes) {
    if (o.firstFailure === null) continue;
    await repo.markFailing(trx, o.workspaceId, o.webhookId, o.firstFailure, o.lastSuccess !== null);
    const row = await repo.disableFailing(trx, o.workspaceId, o.webhookId, now, now - AUTO_DISABLE_MS);
    if (!row) continue;
    const reason = disabledReason(row.failing_since ?? o.firstFailure, o.lastError);
    await repo.setDisabledReason(trx, o.workspaceId, o.webhookId, reason);
    await queue.cancelGroup(trx, WEBHOOK_QUEUE, o.webhookId);
    disabled.push({ ...row, disabled_reason: reason });
  }
  for (const row of disabled) {
    await audit.record(trx, { workspaceId: row.workspace_id, action: AUDIT_ACTIONS.webhookDisabled, actor: SYSTEM, target: { kind: 'webhook', id: row.id }, details: { reason: row.disabled_reason } });
    await events.emit(trx, { workspaceId: row.workspace_id, type: 'webhook.disabled', data: { ...toWebhookView(row) } });
  }
}
