import type { Db } from '../../db/database.js';
import { asWork } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { conflict, notFound } from '../../lib/errors.js';
import type { Queue } from '../../jobs/queue.js';
import type { EventsService } from '../events/events.service.js';
import { messageRepository, type MessageDetailRow } from '../messages/message.repository.js';
import type { SentMessageView } from '../messages/message.types.js';
import { toMessageListView, toSentMessageView } from '../messages/message.views.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { scheduledTime } from './schedule.js';
import type { OutboundTable } from './sending.table.js';

/** Cancelling and rescheduling a message that waits for its send_at (`scheduled`). */
export interface Scheduling {
  /** The message will never leave: `cancelled`, its job removed, `message.cancelled` emitted, in one transaction. */
  cancel(tenant: TenantContext, messageId: string): Promise<SentMessageView>;
  /** The message leaves at `sendAt` instead (a time already past: now), dated anew (its `date`; the copy sent, at delivery). */
  reschedule(tenant: TenantContext, messageId: string, sendAt: string): Promise<SentMessageView>;
}

export interface SchedulingDeps {
  db: Db;
  clock: Clock;
  events: EventsService;
  queue: Pick<Queue, 'cancel' | 'reschedule'>;
}

type Key = { workspaceId: string; messageId: string };

const scheduleRepository = {
  state: (db: Db, { workspaceId, messageId }: Key) =>
    db.selectFrom('outbound').select(['status', 'job_id']).where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).executeTakeFirst(),
  /** The change, made only while the message is still `scheduled`: false when a worker (or another call) came first. */
  async whileScheduled(db: Db, { workspaceId, messageId }: Key, values: Partial<OutboundTable>): Promise<boolean> {
    const result = await db
      .updateTable('outbound')
      .set(values)
      .where('workspace_id', '=', workspaceId)
      .where('message_id', '=', messageId)
      .where('status', '=', 'scheduled')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
  /**
   * The message's `date`, `sendAt`. Its stored source is not rewritten (up to 25 MiB of attachments for a 60-byte
   * request): the worker sets the Date field of the copy it sends to `send_at` (delivery.handler.ts).
   */
  async redate(db: Db, { workspaceId, messageId }: Key, sendAt: number): Promise<void> {
    await db.updateTable('messages').set({ date: sendAt }).where('workspace_id', '=', workspaceId).where('id', '=', messageId).execute();
  },
};

/**
 * The outbound row's status decides who wins against a worker that has just claimed the message's job: the
 * worker starts only a message it flips from `scheduled` to `processing` (delivery.repository.ts), and these
 * change it only while it is still `scheduled`, with a conditional UPDATE. Both take the job row first and the
 * outbound row second, so on PostgreSQL they wait for each other instead of deadlocking; on SQLite they are serialized.
 */
export function createScheduling({ db, clock, events, queue }: SchedulingDeps): Scheduling {
  /** 404 for a message this workspace does not have; otherwise 409 saying what it is instead. */
  async function refusal(trx: Db, tenant: TenantContext, messageId: string, status: string | undefined) {
    if (!(await messageRepository.findMessage(trx, tenant.workspaceId, messageId))) return notFound('message_not_found', `no message ${messageId}`);
    const what = status === undefined ? 'was never sent' : `is ${status}`;
    return conflict('message_not_scheduled', `message ${messageId} ${what}: only a scheduled message can be cancelled or rescheduled`);
  }

  /**
   * Run `change` on a scheduled message and `then` on the message as it left it, in one transaction; the message's
   * delivery view.
   */
  async function onScheduled(
    tenant: TenantContext,
    messageId: string,
    change: (trx: Db, key: Key, jobId: string | null) => Promise<boolean>,
    then?: (trx: Db, row: MessageDetailRow) => Promise<unknown>,
  ): Promise<SentMessageView> {
    const key = { workspaceId: tenant.workspaceId, messageId };
    const row = await db.transaction().execute(async (trx) => {
      const state = await scheduleRepository.state(trx, key);
      if (state?.status !== 'scheduled' || !(await change(trx, key, state.job_id))) throw await refusal(trx, tenant, messageId, state?.status);
      const changed = await messageRepository.findMessage(trx, tenant.workspaceId, messageId);
      if (!changed) throw await refusal(trx, tenant, messageId, undefined);
      await then?.(trx, changed);
      return changed;
    });
    return toSentMessageView(row);
  }

  return {
    cancel(tenant, messageId) {
      return onScheduled(
        tenant,
        messageId,
        async (trx, key, jobId) => {
          if (jobId !== null) await queue.cancel(asWork(trx), jobId);
          return scheduleRepository.whileScheduled(trx, key, { status: 'cancelled', updated_at: clock.now() });
        },
        (trx, row) => events.emit(asWork(trx), { workspaceId: tenant.workspaceId, type: 'message.cancelled', data: { ...toMessageListView(row) } }),
      );
    },

    async reschedule(tenant, messageId, sendAtText) {
      const now = clock.now();
      const sendAt = scheduledTime(sendAtText, now) ?? now;
      return onScheduled(tenant, messageId, async (trx, key, jobId) => {
        if (jobId !== null) await queue.reschedule(asWork(trx), jobId, sendAt);
        if (!(await scheduleRepository.whileScheduled(trx, key, { send_at: sendAt, updated_at: now }))) return false;
        await scheduleRepository.redate(trx, key, sendAt);
        return true;
      });
    },
  };
}
