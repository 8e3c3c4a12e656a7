import { iso } from '../../lib/clock.js';
import { withoutInvisibleFormat } from '../../lib/mail-text.js';
import type { RecipientState } from '../mail/outbound.table.js';
import type { AttachmentView, AuthSummary, DeliveryDetail, DeliveryEvent, FolderThreadView, MessageListView, SentMessageView, ThreadView } from './message.types.js';
import type { DeliveryColumns, DeliveryDetailColumns, FolderThreadRow, MessagePageRow, ThreadRow } from '../mail/mail.store.js';
import type { AddressView } from './mime.js';

const parse = <T>(text: string): T => JSON.parse(text) as T;

/** Attempts as stored; those recorded before their TLS session was kept show it as unknown (null). */
const deliveryEvents = (text: string | null | undefined): DeliveryEvent[] =>
  parse<Array<Partial<DeliveryEvent> & Omit<DeliveryEvent, 'tls' | 'mta_sts'>>>(text ?? '[]').map((e) => ({ ...e, tls: e.tls ?? null, mta_sts: e.mta_sts ?? null }));

/**
 * A message row → the API's list view, the one writer of it: pages, thread details, single messages and the
 * events' `data` all start here, and the HTTP routes write it through their response schemas (MessageListItem in
 * transports/http/schemas.ts), so a new field is added here and there. With the row's delivery state (read by the
 * views' queries, see mail/message.store.ts DELIVERY_COLUMNS), an outbound message's view adds `status` and `events`.
 */
export function toMessageListView(row: MessagePageRow & Partial<DeliveryColumns>): MessageListView {
  const view: MessageListView = {
    message_id: row.id,
    mailbox: row.mailbox_address,
    direction: row.direction,
    folder: row.folder,
    read: row.read === 1,
    flagged: row.flagged === 1,
    answered: row.answered === 1,
    labels: parse<string[]>(row.labels),
    thread_id: row.thread_id,
    from: parse<AddressView | null>(row.from_json),
    to: parse<AddressView[]>(row.to_json),
    cc: parse<AddressView[]>(row.cc_json),
    subject: row.subject,
    date: row.date === null ? null : iso(row.date),
    snippet: row.snippet,
    size: row.size,
    // Mail stored before names were cleaned on arrival is shown as it would be stored now (mime.ts shownName).
    attachments: parse<AttachmentView[]>(row.attachments_json).map((a) => ({ ...a, filename: withoutInvisibleFormat(a.filename) })),
    auth: parse<AuthSummary>(row.auth_json),
    internet_message_id: row.internet_message_id,
    created_at: iso(row.created_at),
  };
  if (row.out_status != null) {
    view.status = row.out_status;
    view.events = deliveryEvents(row.out_events);
    if (row.out_send_at != null) view.send_at = iso(row.out_send_at);
  }
  return view;
}

/**
 * An outbound message's delivery recipient by recipient (the columns of DELIVERY_DETAIL_COLUMNS), the one writer of
 * it for `GET /sent` and the single view. A row without a delivery (a message moved into `sent` that was never sent)
 * has no recipients and no attempts.
 */
export function toDeliveryDetail(row: Partial<DeliveryDetailColumns>): DeliveryDetail {
  return {
    recipients: parse<RecipientState[]>(row.out_recipients ?? '[]'),
    attempts: deliveryEvents(row.out_events),
    last_error: row.out_last_error ?? null,
    delivery_notification: row.out_delivery_notification === 1,
  };
}

/** A message of `GET /sent`: one never sent (moved into `sent`) counts as `accepted`, as it always has. */
export function toSentMessageView(row: MessagePageRow & DeliveryDetailColumns): SentMessageView {
  return { ...toMessageListView(row), status: row.out_status ?? 'accepted', ...toDeliveryDetail(row) };
}

export function toThreadView(row: ThreadRow): ThreadView {
  return {
    thread_id: row.id,
    mailbox: row.mailbox_address,
    subject: row.subject,
    labels: parse<string[]>(row.labels),
    message_count: row.message_count,
    unread_count: row.unread_count,
    participants: parse<string[]>(row.participants),
    last_message_at: iso(row.last_message_at),
    snippet: row.snippet,
  };
}

/** A thread as a folder's conversation list shows it: the thread, and what the folder holds of it. */
export function toFolderThreadView(row: FolderThreadRow): ThreadView {
  const senders: AddressView[] = [];
  for (const text of row.senders) {
    const sender = parse<AddressView | null>(text);
    if (sender && !senders.some((s) => s.address === sender.address)) senders.push(sender);
  }
  const in_folder: FolderThreadView = {
    folder: row.folder,
    message_count: row.messageCount,
    unread_count: row.unreadCount,
    senders,
    message_id: row.messageId,
    last_message_at: iso(row.lastMessageAt),
    snippet: row.snippet,
  };
  return { ...toThreadView(row.thread), in_folder };
}
