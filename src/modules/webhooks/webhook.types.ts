/** The queue webhook delivery jobs go through (one job per endpoint and event). */
export const WEBHOOK_QUEUE = 'webhook';
/** Attempts per endpoint and event. */
export const MAX_ATTEMPTS = 8;
/** Each retry waits 5× the one before, ±20%. */
export const BACKOFF_FACTOR = 5;
export const BACKOFF_JITTER = 0.2;
/** A Retry-After is honoured up to an hour. */
export const MAX_RETRY_AFTER_MS = 3_600_000;
/** Most of a receiver's answer that is read; the rest is discarded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Most of the answer's text kept in a failed attempt's `error`. */
export const ERROR_BODY_EXCERPT = 256;
/** A replaced secret still signs for 24 hours. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** Replaced secrets kept at most (a signature header per secret). */
export const MAX_PREVIOUS_SECRETS = 10;
/** Endpoints per workspace: every event is matched against all of them, in the producer's transaction. */
export const MAX_WEBHOOKS_PER_WORKSPACE = 100;
/** An endpoint every attempt of which has failed for this long is disabled at its next failure. */
export const AUTO_DISABLE_MS = 5 * 86_400_000;
/** How far back `recover` reaches (events are kept longer; a receiver down for a month needs a full resync anyway). */
export const RECOVER_MAX_AGE_MS = 30 * 86_400_000;
/** Events one `recover` call examines at most, newest first; `next_before` continues from where it stopped. */
export const RECOVER_SCAN_LIMIT = 5000;
/** Deliveries one worker process runs at once, over all endpoints and workspaces. */
export const DELIVERY_CONCURRENCY = 128;
/**
 * Deliveries to one endpoint running at once, in every worker process together (the default of
 * MAILROOM_WEBHOOK_ENDPOINT_CONCURRENCY): a receiver that never answers ties up only these slots.
 */
export const ENDPOINT_CONCURRENCY = 8;
/** The most MAILROOM_WEBHOOK_ENDPOINT_CONCURRENCY may be: the sender's connections per receiver. */
export const MAX_ENDPOINT_CONCURRENCY = 32;
/** Deliveries of one workspace running at once, in every process together (MAILROOM_WEBHOOK_WORKSPACE_CONCURRENCY). */
export const WORKSPACE_CONCURRENCY = 32;

/** The caps of a workspace's webhook work (settings; see the README's settings table). */
export interface WebhookCaps {
  webhookEndpointConcurrency: number;
  webhookWorkspaceConcurrency: number;
  /** Pending deliveries of an endpoint, and of a workspace, past which replay, recover and test answer 429. */
  webhookEndpointPendingMax: number;
  webhookWorkspacePendingMax: number;
  /** Replay, recover and test calls per workspace per minute, in this process. */
  webhookReplaysPerMinute: number;
}

/** An endpoint as the API shows it (docs/api.md); the secret never appears. */
export interface WebhookView {
  webhook_id: string;
  url: string;
  event_types: string[];
  active: boolean;
  has_secret: boolean;
  created_at: string;
  updated_at: string;
  /** Set when the service disabled the endpoint (every attempt failing for 5 days, or a 410 answer); cleared by re-activating it. */
  disabled_at: string | null;
  disabled_reason: string | null;
}

/** What `recover` queued, and where to continue when it stopped at RECOVER_SCAN_LIMIT events. */
export interface RecoverResult {
  ok: true;
  queued: number;
  /** Null when every event since `since` was examined; otherwise pass it as `before` (with the same `since`) to go on. */
  next_before: string | null;
}

/** The creation answer: the endpoint, plus `secret` when the service generated it (shown this once). */
export type CreatedWebhookView = WebhookView & { secret?: string };

export interface DeliveryView {
  delivery_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  success: boolean;
  duration_ms: number;
  delivered_at: string;
}

/** One POST to a receiver, over a connection pinned to an address the rules accepted. */
export interface WebhookRequest {
  url: URL;
  /** The validated address to connect to; TLS still verifies the URL's host name. */
  address: string;
  family: 4 | 6;
  headers: Record<string, string>;
  body: string;
  /** Aborts the request (the attempt's time-out, the worker's lease). */
  signal: AbortSignal;
}

export type WebhookResponse =
  | {
      type: 'response';
      statusCode: number;
      /** The Retry-After header as sent, if any. */
      retryAfter: string | null;
      /** The start of the answer's body (at most MAX_RESPONSE_BYTES read), as text. */
      body: string;
    }
  | { type: 'error'; error: string };

/** Sends webhook requests; main.ts injects the HTTP client (transports/http/webhook.client.ts). */
export interface WebhookSender {
  send(request: WebhookRequest): Promise<WebhookResponse>;
  /** Close pooled connections. */
  close(): Promise<void>;
}

/** The job a fan-out writes: the event's stored bytes are read from `events` when it runs. */
export interface WebhookJobPayload {
  webhook_id: string;
  event_id: string;
}
