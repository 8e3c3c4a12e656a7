import type { ColumnType } from 'kysely';
import type { SearchDocument } from '../../lib/mail-text.js';

/** Row types of the message store. Times are epoch milliseconds; *_json columns hold JSON text. */
export interface ThreadTable {
  id: string;
  workspace_id: string;
  mailbox_id: string;
  subject: string;
  /** Normalised subject (Re:/Fwd: stripped, lower case) for subject threading. */
  subject_key: string;
  /** JSON array of lower-case addresses. */
  participants: string;
  message_count: number;
  unread_count: number;
  /** JSON array: the union of the thread's messages' labels. */
  labels: string;
  snippet: string;
  last_message_at: number;
  created_at: number;
  updated_at: number;
}

export interface MessageTable {
  id: string;
  workspace_id: string;
  mailbox_id: string;
  thread_id: string;
  direction: 'inbound' | 'outbound';
  folder: string;
  read: number;
  /** JSON array of labels (the message_labels rows are the index for filtering). */
  labels: string;
  from_json: string;
  /** The sender's address as a search query holds it (lib/mail-text.ts `foldCase`), '' without one: `from:` finds it by index. */
  from_address: string;
  to_json: string;
  cc_json: string;
  subject: string;
  snippet: string;
  size: number;
  date: number | null;
  internet_message_id: string | null;
  auth_json: string;
  attachments_json: string;
  /** SMTP envelope: {mail_from, rcpt_to, remote_ip, helo}. */
  envelope_json: string;
  created_at: number;
  updated_at: number;
  /** The message's UID in its folder: from the folder's `uidnext`, new on every move, never reused (IMAP). */
  uid: number;
  /** The folder's modseq at the message's last change (CONDSTORE's MODSEQ). */
  modseq: number;
  /** IMAP's \Flagged, \Answered and \Deleted (marked for EXPUNGE): 0 or 1. */
  flagged: number;
  answered: number;
  deleted: number;
}

export interface MessageContentTable {
  message_id: string;
  workspace_id: string;
  text_body: string | null;
  html_body: string | null;
  headers_json: string;
  raw: Buffer;
  /** PostgreSQL only: the full-text index's `tsvector` (written as its text form, `tsvectorOf`). */
  search_document?: string | null;
}

/** rspamd's verdict on an inbound message, when it was scored: the score, the action and the top symbols (JSON). */
export interface MessageSpamTable {
  message_id: string;
  workspace_id: string;
  score: number;
  action: string;
  /** JSON array of `{name, score}`, highest score first. */
  symbols_json: string;
}

/**
 * A message's ENVELOPE, BODYSTRUCTURE and BODY as IMAP FETCH writes them, computed from `raw` by the first FETCH that
 * needs them (README-structures.md). `version` is the serializer's; a row of another version is not served.
 */
export interface MessageStructureTable {
  message_id: string;
  workspace_id: string;
  version: number;
  /** ENVELOPE, BODYSTRUCTURE and BODY in one value (`packStructure`). */
  structure: Buffer;
}

export interface AttachmentTable {
  id: string;
  workspace_id: string;
  message_id: string;
  filename: string;
  content_type: string;
  size: number;
  inline: number;
  content_id: string | null;
  content: Buffer;
}

export interface MessageLabelTable {
  message_id: string;
  workspace_id: string;
  label: string;
}

export interface ThreadRefTable {
  workspace_id: string;
  mailbox_id: string;
  message_key: string;
  thread_id: string;
}

export interface FolderCountTable {
  workspace_id: string;
  mailbox_id: string;
  folder: string;
  total: number;
  unread: number;
  /** Raised with every change to a message of the folder (PostgreSQL returns a bigint as a string). */
  modseq: ColumnType<number | string, number | undefined, number>;
  /** The raw size of the folder's messages summed (a workspace's stored bytes are the sum over its rows). */
  bytes: ColumnType<number | string, number | undefined, number>;
  /** The UID the folder's next message gets; raised by every message stored or moved in. */
  uidnext: ColumnType<number, number | undefined, number>;
  /**
   * The folder's UIDVALIDITY: seconds since the epoch when the row was made (rows live as long as their mailbox);
   * raised only when the folder's UIDs are renumbered because `uidnext` passed IMAP's 32 bits (uid-renumber.store.ts).
   */
  uidvalidity: ColumnType<number, number | undefined, number>;
}

/** A UID removed from a folder (deleted, moved out, expired), kept a while for clients' QRESYNC (VANISHED). */
export interface MailExpungedTable {
  workspace_id: string;
  mailbox_id: string;
  folder: string;
  uid: number;
  /** The folder's modseq after the removal. */
  modseq: number;
  expunged_at: number;
}

/** SQLite: the contentless FTS5 index (columns as `SearchDocument`'s fields). Only `rowid` can be read back. */
export type MessageFtsTable = SearchDocument & { rowid: number };

/** SQLite: the FTS5 row of each message (`id` is the FTS rowid; in arrival order). */
export interface MessageFtsKeyTable {
  id: ColumnType<number, number | undefined, never>;
  message_id: string;
  workspace_id: string;
}
