// The admin objects of the session API, as docs/api.md describes them (only the fields the pages read).

export type Role = 'owner' | 'admin' | 'member';

export interface DnsRecord {
  record_name: string;
  record_type: string;
  record_value: string;
}

export interface SendingDomain {
  domain_id: string;
  domain: string;
  status: 'pending' | 'verified';
  dkim: DnsRecord & { selector: string };
  /** Advice, never required: an SPF record that includes the return-path domain. */
  spf: DnsRecord;
  created_at: string;
  verified_at: string | null;
  /** Only in the answers of create and of a records regeneration: the token is stored hashed. */
  verification?: DnsRecord;
}

/** One record as verify found it in DNS. */
export interface RecordCheck {
  record_name: string;
  record_type: string;
  expected: string;
  found: string[] | null;
  status: 'ok' | 'missing' | 'mismatch' | 'error';
  reason: string;
}

/** The answer of verify: the domain, each record's check, and one sentence for the whole. */
export interface CheckedDomain extends SendingDomain {
  checks: { verification: RecordCheck; dkim: RecordCheck; spf: RecordCheck };
  summary: string;
}

export interface ServiceToken {
  token_id: string;
  name: string;
  scope: string;
  domain_id: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
  /** Only in the answers of create and rotate. */
  token?: string;
}

export interface ApiKey {
  key_id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Only in the answer of create. */
  api_key?: string;
}

export interface Webhook {
  webhook_id: string;
  url: string;
  event_types: string[];
  active: boolean;
  has_secret: boolean;
  created_at: string;
  updated_at: string;
  /** Only in the answer of a create without a secret of the caller's. */
  secret?: string;
}

export interface WebhookDelivery {
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

export interface ListEntry {
  direction: 'inbound' | 'outbound';
  list_type: 'allow' | 'block';
  entry: string;
  kind: 'address' | 'domain' | 'ip';
  reason: string | null;
  created_at: string;
}

export interface Member {
  user_id: string;
  email: string;
  role: Role;
  joined_at: string;
}

/** The event names a webhook may filter on (docs/api.md, Events); `message.delivered` is never emitted. */
export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.accepted',
  'message.failed',
  'message.bounced',
  'message.rejected',
  'message.complained',
  'domain.verified',
] as const;
