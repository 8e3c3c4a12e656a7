/** A message being written: sent, it becomes an outbound message (and leaves this table). */
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
}

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
