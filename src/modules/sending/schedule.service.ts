import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { conflict, notFound } from '../../lib/errors.js';
import type { Queue } from '../../jobs/queue.js';
import type { SendingMailStore } from '../mail/sending-mail.store.js';
import type { MessageDetailRow } from '../mail/mail.store.js';
import type { SentMessageView } from '../messages/message.types.js';
import { toMessageListView, toSentMessageView } from '../messages/message.views.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { scheduledTime } from './schedule.js';
import type { EventOutbox } from './sending.deps.js';
import type { MailStore } from '../mail/mail.store.js';

/** Cancelling and rescheduling a message that waits for its send_at (`scheduled`). */
export interface Scheduling {
  /** The message will never leave: `cancelled`, its job removed, `message.cancelled` emitted, in one transaction. */
  cancel(tenant: TenantContext, messageId: string): Promise<SentMessageView>;
  /** The message leaves at `sendAt` instead (a time already past: now), dated anew (its `date`; the copy sent, at delivery). */
  reschedule(tenant: TenantContext, messageId: string, sendAt: string): Promise<SentMessageView>;
  /**
   * Cancel as `cancel` does, then run `then` on the cancelled message and its delivery state in the same transaction
   * (undo send: the copy becomes a draft again); then's answer. The same 404 and 409 as `cancel`.
   */
  cancelWith<T>(tenant: TenantContext, messageId: string, then: (trx: Work, row: MessageDetailRow, state: { in_reply_to: string | null }) => Promise<T>): Promise<T>;
}

export interface SchedulingDeps {
  work: Work;
  clock: Clock;
  events: EventOutbox;
  queue: Pick<Queue, 'cancel' | 'reschedule'>;
  mail: Pick<SendingMailStore, 'deliveryState' | 'cancelScheduled' | 'rescheduleScheduled'> & Pick<MailStore, 'findMessage'>;
}

type Key = { workspaceId: string; messageId: string };

/**
 * Cancel and reschedule change the job first (the queue's) and the outbound row second, as the delivery worker
 * does, and the outbound row only while it is still `scheduled` (see outbound.store.ts for who wins a race).
 */
export function createScheduling({ work, clock, events, queue, mail }: SchedulingDeps): Scheduling {
  /** 404 for a message this workspace does not have; otherwise 409 saying what it is instead. */
  async function refusal(trx: Work, tenant: TenantContext, messageId: string, status: string | undefined) {
    if (!(await mail.findMessage(trx, tenant.workspaceId, messageId))) return notFound('message_not_found', `no message ${messageId}`);
    const what = status === undefined ? 'was never sent' : `is ${status}`;
    return conflict('message_not_scheduled', `message ${messageId} ${what}: only a scheduled message can be cancelled or rescheduled`);
  }

  /**
   * Run `change` on a scheduled message and `then` on the message as it left it, in one transaction; the message's
   * delivery view.
   */
  async function onScheduled<T>(
    tenant: TenantContext,
    messageId: string,
    change: (trx: Work, key: Key, jobId: string | null) => Promise<boolean>,
    then: (trx: Work, row: MessageDetailRow, state: { in_reply_to: string | null }) => Promise<T>,
  ): Promise<T> {
    const key = { workspaceId: tenant.workspaceId, messageId };
    return work.transaction().execute(async (trx) => {
      const state = await mail.deliveryState(trx, key);
      if (state?.status !== 'scheduled' || !(await change(trx, key, state.job_id))) throw await refusal(trx, tenant, messageId, state?.status);
      const changed = await mail.findMessage(trx, tenant.workspaceId, messageId);
      if (!changed) throw await refusal(trx, tenant, messageId, undefined);
      return then(trx, changed, state);
    });
  }

  /** The job removed, the row `cancelled` (final), `message.cancelled` emitted; then `then`. */
  function cancelWith<T>(tenant: TenantContext, messageId: string, then: (trx: Work, row: MessageDetailRow, state: { in_reply_to: string | null }) => Promise<T>): Promise<T> {
    return onScheduled(
      tenant,
      messageId,
      async (trx, key, jobId) => {
        if (jobId !== null) await queue.cancel(trx, jobId);
        return mail.cancelScheduled(trx, key, clock.now());
      },
      async (trx, row, state) => {
        await events.emit(trx, { workspaceId: tenant.workspaceId, type: 'message.cancelled', data: { ...toMessageListView(row) } });
        return then(trx, row, state);
      },
    );
  }

  return {
    cancel: (tenant, messageId) => cancelWith(tenant, messageId, async (_trx, row) => toSentMessageView(row)),
    cancelWith,

    async reschedule(tenant, messageId, sendAtText) {
      const now = clock.now();
      const sendAt = scheduledTime(sendAtText, now) ?? now;
      return onScheduled(
        tenant,
        messageId,
        async (trx, key, jobId) => {
          if (jobId !== null) await queue.reschedule(trx, jobId, sendAt);
          return mail.rescheduleScheduled(trx, key, sendAt, now);
        },
        async (_trx, row) => toSentMessageView(row),
      );
    },
  };
}
