import { insertRows, preparedQuery } from '../../db/prepared.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { CandidateRow, candidatesSelect } from '../lists/list.store.js';
import { idByAddressSelect as mailboxIdSelect } from './mailbox.store.js';
import type { MailTables } from './mail.table.js';
import type { DeliveryStatus } from './outbound.table.js';

/** Identifies one outbound message. */
export type OutboundKey = { workspaceId: string; messageId: string };

/** What a send reads before it writes: the list entries that could apply to its recipients, and its mailbox. */
export type SenderRow = CandidateRow & { mailbox_id: string | null; mailbox_address: string | null };

/** A new outbound message's delivery state, recorded with its `sent` copy. */
export interface NewOutbound extends OutboundKey {
  /** `scheduled` when it waits for `sendAt`. */
  status: Extract<DeliveryStatus, 'queued' | 'scheduled'>;
  mailFrom: string;
  recipients: readonly string[];
  sendAt: number | null;
  /** Its delivery job (one for the message's whole life): what cancel removes and reschedule moves. */
  jobId: string;
  /** Each recipient's copy gets its own one-click unsubscribe fields at delivery. */
  listUnsubscribe?: boolean | undefined;
  /** Receivers are asked for a delivery report (DSN NOTIFY=SUCCESS) at delivery. */
  deliveryNotification?: boolean | undefined;
  /** The message (ours) a draft sent answered, kept so that taking the send back gives the draft back whole. */
  inReplyTo?: string | null | undefined;
  now: number;
}

export interface OutboundStore {
  /**
   * A send's sender check in one statement: the workspace's mailbox of the `from` address and the outbound list
   * entries that could apply to the recipients (`keys`). Every row is a list candidate with the mailbox beside it
   * (its columns null when there is no such mailbox); there is always at least one row.
   */
  readSender(work: Work, query: { workspaceId: string; address: string; keys: readonly string[] }): Promise<SenderRow[]>;
  /** Record a new outbound message's delivery state: every recipient `pending`, no attempt yet. */
  recordOutbounds(work: Work, outbound: readonly NewOutbound[]): Promise<void>;
  /** The message's delivery status and job, if it was sent. */
  deliveryState(work: Work, key: OutboundKey): Promise<{ status: DeliveryStatus; job_id: string | null; in_reply_to: string | null } | undefined>;
  /** Cancel a scheduled message (`cancelled`, final): false when it is no longer `scheduled`. */
  cancelScheduled(work: Work, key: OutboundKey, now: number): Promise<boolean>;
  /**
   * Move a scheduled message to `sendAt` and date it then (its `date`): false when it is no longer `scheduled`.
   * Its stored source is not rewritten (up to 25 MiB of attachments for a 60-byte request): the worker sets the
   * Date field of the copy it sends to `send_at` (delivery.handler.ts).
   */
  rescheduleScheduled(work: Work, key: OutboundKey, sendAt: number, now: number): Promise<boolean>;
}

export interface OutboundStoreDeps {
  /** The outbound list entries a send's recipients could match, as a part of `readSender` (lists module). */
  listCandidates: typeof candidatesSelect;
}

/**
 * The outbound row's status decides who wins against a worker that has just claimed the message's job: the worker
 * starts only a message it flips from `scheduled` to `processing` (delivery.store.ts), and cancel and reschedule
 * change it only while it is still `scheduled`, with a conditional UPDATE. Callers take the job row first (the
 * queue's cancel or reschedule) and the outbound row second, as the worker does, so on PostgreSQL they wait for each
 * other instead of deadlocking; on SQLite they are serialized.
 */
export function createOutboundStore({ listCandidates }: OutboundStoreDeps): OutboundStore {
  // Every send asks it (prepared: see db/prepared.ts). The list entries' part is the lists module's, built by its store.
  const senderQuery = preparedQuery<{ workspaceId: string; address: string; keys: readonly string[] }, SenderRow, MailTables>((db, p) => {
    const workspaceId = p<string>('workspaceId');
    return db
      .selectFrom(listCandidates(db, workspaceId, 'outbound', p.list<string>('keys')).as('l'))
      .leftJoin(mailboxIdSelect(db, workspaceId, p<string>('address')).as('m'), (join) => join.onTrue())
      .select(['l.has_allow', 'l.list_type', 'l.entry', 'l.kind', 'm.id as mailbox_id', 'm.address as mailbox_address']);
  });

  /** The change, made only while the message is still `scheduled`. */
  async function whileScheduled(work: Work, { workspaceId, messageId }: OutboundKey, values: { status?: 'cancelled'; send_at?: number; updated_at: number }) {
    const result = await tablesOf<MailTables>(work)
      .updateTable('outbound')
      .set(values)
      .where('workspace_id', '=', workspaceId)
      .where('message_id', '=', messageId)
      .where('status', '=', 'scheduled')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  return {
    readSender: (work, query) => senderQuery(tablesOf<MailTables>(work), query),

    recordOutbounds: (work, list) =>
      insertRows(
        tablesOf<MailTables>(work),
        'outbound',
        list.map((o) => ({
          message_id: o.messageId,
          workspace_id: o.workspaceId,
          status: o.status,
          mail_from: o.mailFrom,
          recipients_json: JSON.stringify(o.recipients.map((address) => ({ address, status: 'pending', response: null, mx: null }))),
          attempts_json: '[]',
          last_error: null,
          smtp_response: null,
          data_started_at: null,
          send_at: o.sendAt,
          job_id: o.jobId,
          list_unsubscribe: o.listUnsubscribe ? 1 : 0,
          delivery_notification: o.deliveryNotification ? 1 : 0,
          in_reply_to: o.inReplyTo ?? null,
          created_at: o.now,
          updated_at: o.now,
        })),
      ),

    deliveryState: (work, { workspaceId, messageId }) =>
      tablesOf<MailTables>(work).selectFrom('outbound').select(['status', 'job_id', 'in_reply_to']).where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).executeTakeFirst(),

    cancelScheduled: (work, key, now) => whileScheduled(work, key, { status: 'cancelled', updated_at: now }),

    async rescheduleScheduled(work, key, sendAt, now) {
      if (!(await whileScheduled(work, key, { send_at: sendAt, updated_at: now }))) return false;
      await tablesOf<MailTables>(work).updateTable('messages').set({ date: sendAt }).where('workspace_id', '=', key.workspaceId).where('id', '=', key.messageId).execute();
      return true;
    },
  };
}
