/**
 * A message being written: sent, it becomes an outbound message (and leaves this table). IMAP's Drafts mailbox
 * shows it by its MIME source (`raw`) under a UID of the mailbox's 'drafts' folder counter.
 */
export interface DraftTable {
  id: string;
  workspace_id: string;
  mailbox_id: string;
  to_json: string;
  cc_json: string;
  bcc_json: string;
  subject: string;
  body: string;
  html: string | null;
  /** The message_id (ours) this draft replies to. */
  in_reply_to: string | null;
  created_at: number;
  updated_at: number;
  /** The MIME source IMAP shows: as a client saved it, or rendered from the fields when the API wrote them; null: none yet. */
  raw: Buffer | null;
  /** Bytes of `raw` (0 without one); the 'drafts' folder counter sums them into the workspace's stored bytes. */
  size: number;
  /** Its UID in the mailbox's Drafts (null until it has a source); a new source takes a new UID. */
  uid: number | null;
  modseq: number;
  /** IMAP flags (\Seen, \Flagged, \Answered, \Deleted) and keywords, named as the messages table names them. */
  read: number;
  flagged: number;
  answered: number;
  deleted: number;
  labels: string;
}

/** The columns of a draft's IMAP view, which a new draft starts without (no source, no UID). */
export type DraftSourceColumns = 'raw' | 'size' | 'uid' | 'modseq' | 'read' | 'flagged' | 'answered' | 'deleted' | 'labels';

/** A file attached to a draft; ids are `att_…` as the sent copy's are. */
export interface DraftAttachmentTable {
  id: string;
  workspace_id: string;
  draft_id: string;
  filename: string;
  content_type: string;
  size: number;
  /** Set for an inline part (the HTML's `cid:`), without angle brackets. */
  content_id: string | null;
  content: Buffer;
  created_at: number;
}
