import type { Work } from '../../db/tables.js';
import type { ClaimedJob, Queue } from '../../jobs/queue.js';
import type { Clock } from '../../lib/clock.js';
import type { EventsService } from '../events/events.service.js';
import { recordOutcomes, type OutcomeDeps } from './auto-disable.js';
import type { WebhookStore } from './webhook.store.js';
import type { WebhookDeliveryTable } from './webhook.table.js';

/** What becomes of a delivery job once its attempt is recorded. */
export type NextStep =
  | { type: 'complete' }
  | { type: 'retry'; error: string; delayMs: number }
  | { type: 'bury'; error: string }
  /** 410 Gone: the endpoint becomes inactive (disabled, with the reason) and its other jobs are dropped. */
  | { type: 'deactivate' };

interface Settlement {
  attempt: WebhookDeliveryTable;
  job: ClaimedJob<unknown>;
  next: NextStep;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Most attempts recorded in one transaction. */
const MAX_BATCH = 256;

export interface AttemptLog {
  /** Append an attempt to webhook_deliveries and settle its job, atomically; resolves once committed. */
  record(attempt: WebhookDeliveryTable, job: ClaimedJob<unknown>, next: NextStep): Promise<void>;
}

/**
 * Records delivery attempts in batches: the attempts that finish while a batch is being written share
 * the next transaction, written with a handful of statements whatever its size (one INSERT of every
 * attempt, one DELETE of every completed job), so the database does a fixed amount of work per batch
 * rather than per delivery. An attempt whose endpoint was deleted meanwhile is not recorded (its history
 * went with it). If a shared transaction fails (such an endpoint's foreign key, a deadlock), each attempt is
 * recorded again on its own.
 */
export interface AttemptLogDeps {
  work: Work;
  clock: Clock;
  queue: Pick<Queue, 'retry' | 'bury' | 'cancelGroup' | 'completeAll'>;
  store: Pick<WebhookStore, 'present' | 'recordAttempts'> & OutcomeDeps['store'];
  /** Emits `webhook.disabled` for an endpoint the batch disabled. */
  events: Pick<EventsService, 'emit'>;
  audit: OutcomeDeps['audit'];
}

export function createAttemptLog({ work, clock, queue, store, events, audit }: AttemptLogDeps): AttemptLog {
  const waiting: Settlement[] = [];
  let draining = false;

  /**
   * Write a batch. `checked`: first read which endpoints are still there (on PostgreSQL locking them FOR KEY
   * SHARE, so none is deleted before the attempts reference it) and leave out the attempts of the others.
   * Unchecked, an endpoint deleted meanwhile makes the INSERT fail on its foreign key, and the batch is written
   * again checked: one statement less for the common case.
   */
  async function write(trx: Work, batch: readonly Settlement[], checked: boolean): Promise<void> {
    let rows = batch.map((s) => s.attempt);
    if (checked) {
      const present = await store.present(trx, rows);
      rows = rows.filter((a) => present.has(a.webhook_id));
    }
    await store.recordAttempts(trx, rows);
    // Guarded by each lease, as queue.complete is: a job taken over meanwhile stays with its new holder.
    await queue.completeAll(trx, batch.filter((s) => s.next.type === 'complete').map((s) => s.job));
    for (const s of batch) {
      if (s.next.type === 'retry') await queue.retry(s.job, s.next.error, s.next.delayMs, trx);
      else if (s.next.type === 'bury') await queue.bury(s.job, s.next.error, trx);
    }
    const recorded = new Set(rows);
    const gone = batch.filter((s) => s.next.type === 'deactivate' && recorded.has(s.attempt)).map((s) => s.attempt);
    await recordOutcomes(trx, rows.filter((a) => !gone.includes(a)), gone, { clock, queue, events, audit, store });
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (waiting.length > 0) {
        // One turn of the event loop first, so that attempts finishing together share the transaction.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const batch = waiting.splice(0, MAX_BATCH);
        try {
          await work.transaction().execute((trx) => write(trx, batch, false));
          for (const s of batch) s.resolve();
        } catch {
          for (const s of batch) {
            try {
              await work.transaction().execute((trx) => write(trx, [s], true));
              s.resolve();
            } catch (err) {
              s.reject(err);
            }
          }
        }
      }
    } finally {
      draining = false;
    }
  }

  return {
    record(attempt, job, next) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ attempt, job, next, resolve, reject });
        if (!draining) void drain();
      });
    },
  };
}
