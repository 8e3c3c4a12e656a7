export interface WebhookTable {
  id: string;
  workspace_id: string;
  url: string;
  /** JSON array of event names; `[]` means every event. */
  event_types: string;
  /** 1 active, 0 inactive. */
  active: number;
  /** `whsec_` + base64; the HMAC key is its decoded bytes. */
  secret: string | null;
  /** JSON `PreviousSecret[]`: replaced secrets still signed with until `until`. */
  previous_secrets: string;
  created_at: number;
  updated_at: number;
  /** Epoch ms of the first failed attempt since the last successful one; null when the last attempt succeeded. */
  failing_since: number | null;
  /** When the endpoint was disabled because every attempt failed for AUTO_DISABLE_MS; null otherwise. */
  disabled_at: number | null;
  disabled_reason: string | null;
}

/** A secret replaced less than 24 hours ago. */
export interface PreviousSecret {
  secret: string;
  /** Epoch ms after which it no longer signs. */
  until: number;
}

export interface WebhookDeliveryTable {
  id: string;
  workspace_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  /** The job's claim number: 1 for the first attempt, continuing across crashes. */
  attempt: number;
  status_code: number | null;
  error: string | null;
  success: number;
  duration_ms: number;
  /** When the attempt started (epoch ms). */
  delivered_at: number;
}

/** The webhooks module's tables: endpoints and the log of delivery attempts. */
export interface WebhookTables {
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
}
