import type { DeliveryResult } from './delivery.types.js';

/** `scheduled` waits for its send_at and may be `cancelled` (final) until a worker takes it; the rest are the delivery states of docs/api.md. */
export type DeliveryStatus = 'scheduled' | 'queued' | 'processing' | 'accepted' | 'failed' | 'unknown' | 'cancelled';
export type RecipientStatus = 'pending' | 'accepted' | 'failed' | 'unknown';

/** One recipient of an outbound message (`outbound.recipients_json` holds a list of them). */
export interface RecipientState {
  address: string;
  status: RecipientStatus;
  response: string | null;
  mx: string | null;
}

/** One SMTP transaction, or a failed route lookup, of a delivery (`outbound.attempts_json` holds a list of them). */
export interface Attempt {
  at: string;
  mx: string | null;
  recipients: string[];
  outcome: DeliveryResult['type'] | 'no_route';
  response: string;
}

export interface OutboundTable {
  message_id: string;
  workspace_id: string;
  status: DeliveryStatus;
  /**
   * The VERP return path of the first recipient; the others' follow from their place in `recipients_json` (verp.ts).
   * A message sent before return paths named a recipient has its one whole-message return path here.
   */
  mail_from: string;
  /** JSON: [{address, status, response, mx}] */
  recipients_json: string;
  /** JSON: [{at, mx, recipients, response, outcome}] */
  attempts_json: string;
  last_error: string | null;
  smtp_response: string | null;
  data_started_at: number | null;
  /** When a scheduled message is to leave (epoch ms); null for a message sent at once. */
  send_at: number | null;
  /** The message's delivery job (one for its whole life, retries included): what cancel removes and reschedule moves. */
  job_id: string | null;
  created_at: number;
  updated_at: number;
}

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
