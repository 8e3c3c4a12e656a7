import type { AttemptTls, DeliveryStatus, RecipientState } from '../mail/outbound.table.js';
import type { AddressView } from './mime.js';

/** The folders a message can be in. */
export const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;
export type Folder = (typeof FOLDERS)[number];

/** Labels are 1–64 characters of [a-z0-9_.:-]. */
export const LABEL_PATTERN = /^[a-z0-9_.:-]{1,64}$/;
export const MAX_LABELS_PER_MESSAGE = 100;

export interface AuthSummary {
  spf: string;
  dkim: string;
  dmarc: string;
}

/** rspamd's verdict on an inbound message: its score, action and highest-scoring symbols (at most 10). */
export interface SpamView {
  score: number;
  action: string;
  symbols: Array<{ name: string; score: number }>;
}

export interface AttachmentView {
  attachment_id: string;
  filename: string;
  content_type: string;
  size: number;
  inline: boolean;
  content_id?: string | null;
}

/**
 * One delivery attempt of an outbound message, oldest first: an SMTP transaction, or a route lookup that found no
 * mail host (`no_route`). The same entries as `attempts` in `GET /app/api/sent` (decision 215).
 */
export interface DeliveryEvent {
  at: string;
  mx: string | null;
  recipients: string[];
  outcome: string;
  response: string;
  /** The SMTP transaction's TLS session; null: plain text, no session, or recorded before sessions were kept. */
  tls: AttemptTls | null;
  /** The recipient domain's MTA-STS mode applied (`enforce`, `testing`); null: no policy, or the relay. */
  mta_sts: 'enforce' | 'testing' | null;
}

/** A message as lists show it (docs/api.md). */
export interface MessageListView {
  message_id: string;
  mailbox: string;
  direction: 'inbound' | 'outbound';
  folder: string;
  read: boolean;
  /** Starred by the user (IMAP's \Flagged). */
  flagged: boolean;
  /** Replied to (IMAP's \Answered). */
  answered: boolean;
  labels: string[];
  thread_id: string;
  from: AddressView | null;
  to: AddressView[];
  cc: AddressView[];
  subject: string;
  date: string | null;
  snippet: string;
  size: number;
  attachments: AttachmentView[];
  auth: AuthSummary;
  internet_message_id: string | null;
  created_at: string;
  /** Outbound messages only: the delivery status (docs/api.md) and what each attempt met. */
  status?: DeliveryStatus;
  events?: DeliveryEvent[];
  /** Outbound messages sent with a `send_at` only: when it was (or is) to leave. */
  send_at?: string;
}

/**
 * What an outbound message's delivery came to, recipient by recipient: an item of `GET /sent` and the single view
 * of an outbound message carry it (decision 280). `attempts` are the `events` under the name `/sent` gave them first.
 */
export interface DeliveryDetail {
  recipients: RecipientState[];
  attempts: DeliveryEvent[];
  last_error: string | null;
  /** Sent with `delivery_notification`: receivers that offer DSN were asked to report delivery. */
  delivery_notification: boolean;
}

/** A message of `GET /sent`: the list view with its delivery status and detail. */
export interface SentMessageView extends MessageListView, DeliveryDetail {
  status: DeliveryStatus;
}

/** The single-message view adds the bodies and headers, and for an outbound message its delivery detail. */
export interface MessageView extends MessageListView, Partial<DeliveryDetail> {
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  /** rspamd's verdict when the message was scored on arrival; null otherwise. */
  spam: SpamView | null;
}

export interface ThreadView {
  thread_id: string;
  mailbox: string;
  subject: string;
  labels: string[];
  message_count: number;
  unread_count: number;
  participants: string[];
  last_message_at: string;
  snippet: string;
  /** With a `folder` filter: what that folder holds of the thread. */
  in_folder?: FolderThreadView;
}

/** A thread's share of one folder: a conversation list's row. */
export interface FolderThreadView {
  folder: string;
  message_count: number;
  unread_count: number;
  /** The senders of its messages in the folder, one per address, in order of first appearance, at most 10. */
  senders: AddressView[];
  /** Its newest message in the folder. */
  message_id: string;
  last_message_at: string;
  snippet: string;
}

export interface ThreadDetailView extends ThreadView {
  messages: MessageListView[];
}

/**
 * A search answer counts its matches up to this many (`total_capped` beyond): counting every match of a common
 * word in a million messages is most of the work of a search, and no one pages that far.
 */
export const SEARCH_TOTAL_CAP = 1000;

/** A page of messages, newest first (`GET /inbox`, `GET /app/api/messages`). */
export interface MessagePage {
  messages: MessageListView[];
  total: number;
  limit: number;
  offset: number;
  /** Searches only: `total` stopped counting at its cap (SEARCH_TOTAL_CAP), there are more matches. */
  total_capped?: boolean;
}

export interface MessageListQuery {
  mailbox?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  thread_id?: string | undefined;
  unread?: boolean | undefined;
  /** true: only starred messages (false is the same as not given). */
  flagged?: boolean | undefined;
  limit: number;
  offset: number;
}

/** A search: a list query with `q` in the search query language (search-query.ts). */
export interface MessageSearchQuery extends MessageListQuery {
  q: string;
}
