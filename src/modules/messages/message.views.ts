import { iso } from '../../lib/clock.js';
import type { AttachmentView, AuthSummary, MessageListView, ThreadView } from './message.types.js';
import type { MessagePageRow, ThreadRow } from './message.repository.js';
import type { AddressView } from './mime.js';

const parse = <T>(text: string): T => JSON.parse(text) as T;

/** A message row → the API's list view. */
export function toMessageListView(row: MessagePageRow): MessageListView {
  return {
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
