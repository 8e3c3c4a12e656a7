import { iso } from '../../lib/clock.js';
import { jsonString } from '../../lib/json-string.js';
import type { AttachmentView, AuthSummary, DeliveryEvent, MessageListView, ThreadView } from './message.types.js';
import type { DeliveryColumns, MessagePageJsonRow, MessagePageRow, ThreadRow } from './message.repository.js';
import type { AddressView } from './mime.js';

const parse = <T>(text: string): T => JSON.parse(text) as T;

/**
 * A message row → the API's list view; with the row's delivery state (read by the views' queries, see
 * message.repository.ts DELIVERY_COLUMNS), an outbound message's view adds `status` and `events`.
 */
export function toMessageListView(row: MessagePageRow & Partial<DeliveryColumns>): MessageListView {
  const view: MessageListView = {
    message_id: row.id,
    mailbox: row.mailbox_address,
    direction: row.direction,
    folder: row.folder,
    read: row.read === 1,
    labels: parse<string[]>(row.labels),
    thread_id: row.thread_id,
    from: parse<AddressView | null>(row.from_json),
    to: parse<AddressView[]>(row.to_json),
    cc: parse<AddressView[]>(row.cc_json),
    subject: row.subject,
    date: row.date === null ? null : iso(row.date),
    snippet: row.snippet,
    size: row.size,
    attachments: parse<AttachmentView[]>(row.attachments_json),
    auth: parse<AuthSummary>(row.auth_json),
    internet_message_id: row.internet_message_id,
    created_at: iso(row.created_at),
  };
  if (row.out_status != null) {
    view.status = row.out_status;
    view.events = parse<DeliveryEvent[]>(row.out_events ?? '[]');
  }
  return view;
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

const str = jsonString;

/**
 * The JSON text of a page of messages (`MessagePage`): for each row the JSON of
 * `toMessageListView(row)` (the keys in another order), written without parsing the stored
 * JSON columns and serialising them again — the database hands them over already joined in
 * `row.head` (see message.repository.ts, pageJsonColumns); only the fields that need escaping or date
 * formatting are written here. Parsing and re-serialising was the largest part of answering
 * `GET /inbox`, and no serializer library can embed stored JSON text (hence this by hand);
 * test/message-page.test.ts holds the two writings equal.
 */
export function messagePageJson(rows: readonly MessagePageJsonRow[], total: number, limit: number, offset: number): string {
  let out = '{"messages":[';
  // A page is usually one mailbox's: its address is escaped once.
  let mailbox = '';
  let mailboxJson = '""';
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (i > 0) out += ',';
    if (row.mailbox_address !== mailbox) {
      mailbox = row.mailbox_address;
      mailboxJson = str(mailbox);
    }
    out +=
      `${row.head},"mailbox":${mailboxJson},"subject":${str(row.subject)},"date":${row.date === null ? 'null' : `"${iso(row.date)}"`}` +
      `,"snippet":${str(row.snippet)},"internet_message_id":${row.internet_message_id === null ? 'null' : str(row.internet_message_id)},"created_at":"${iso(row.created_at)}"}`;
  }
  return `${out}],"total":${total},"limit":${limit},"offset":${offset}}`;
}
