/**
 * A message's delivery state: `queued` until a worker starts it (`processing`), then `accepted`, `failed` or `unknown`
 * (the peer may or may not have it). `scheduled` waits for its send_at and may be `cancelled` (final) until a worker takes it.
 */
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
  /** The SMTP transaction's result (delivery.types.ts `DeliveryResult`), or no route found. */
  outcome: 'sent' | 'rejected' | 'deferred' | 'ambiguous' | 'no_route';
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
  /** 1: each recipient's copy carries its own one-click unsubscribe fields (RFC 8058), added at delivery; 0: none. */
  list_unsubscribe: number;
  /** 1: receivers that offer DSN are asked to report delivery as well as failure (RFC 3461 NOTIFY=SUCCESS,FAILURE); 0: not asked. */
  delivery_notification: number;
  created_at: number;
  updated_at: number;
}
