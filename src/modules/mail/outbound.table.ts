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

/** The TLS session of one SMTP transaction. */
export interface AttemptTls {
  /** `TLSv1.3`, `TLSv1.2`, … (Node's `getProtocol()`). */
  version: string;
  /** The cipher suite's standard name (Node's `getCipher().standardName`). */
  cipher: string;
  /** The peer's certificate chained to a trusted CA and named the host connected for (checked whether required or not). */
  verified: boolean;
}

/** One SMTP transaction, or a failed route lookup, of a delivery (`outbound.attempts_json` holds a list of them). */
export interface Attempt {
  at: string;
  mx: string | null;
  recipients: string[];
  /** The SMTP transaction's result (delivery.types.ts `DeliveryResult`), or no route found. */
  outcome: 'sent' | 'rejected' | 'deferred' | 'ambiguous' | 'no_route';
  response: string;
  /** The transaction's TLS session; null: plain text or no session. Absent on attempts recorded before it was kept. */
  tls?: AttemptTls | null;
  /** The recipient domain's MTA-STS policy mode the attempt ran under; null: none (or the relay). Absent as `tls`. */
  mta_sts?: 'enforce' | 'testing' | null;
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
  /** JSON: [{at, mx, recipients, response, outcome, tls, mta_sts}] */
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
  /** The message (our message_id) a send from a draft answered: an undone send's draft answers it again. Null: none. */
  in_reply_to: string | null;
  created_at: number;
  updated_at: number;
}
