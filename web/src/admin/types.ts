import { everyOf, type Schema } from '../types';

// The admin objects of the session API: the generated types (see ../types.ts). The answers of create and rotate
// add a credential shown that once, which the list views lack.

export type Role = Schema<'Member'>['role'];
/** The roles, most powerful first. */
export const ROLES = everyOf<Role>()(['owner', 'admin', 'member']);
export type DnsRecord = Schema<'DnsRecord'>;
/** A sending domain; `verification` only in the answers of create and of a records regeneration (the token is stored hashed). */
export type SendingDomain = Schema<'SendingDomain'> & Partial<Pick<Schema<'CreatedSendingDomain'>, 'verification'>>;
/** One record as verify found it in DNS. */
export type RecordCheck = Schema<'RecordCheck'>;
/** The answer of verify: the domain, each record's check, and one sentence for the whole. */
export type CheckedDomain = Schema<'CheckedSendingDomain'>;
export type DomainReportFigures = Schema<'DomainReportFigures'>;
/** A service token; `token` only in the answers of create and rotate. */
export type ServiceToken = Schema<'ServiceToken'> & Partial<Pick<Schema<'ServiceTokenWithSecret'>, 'token'>>;
/** An API key; `api_key` only in the answer of create. */
export type ApiKey = Schema<'ApiKey'> & Partial<Pick<Schema<'ApiKeyWithSecret'>, 'api_key'>>;
/** An app password; `password` only in the answer of create. */
export type AppPassword = Schema<'AppPassword'> & Partial<Pick<Schema<'AppPasswordWithSecret'>, 'password'>>;
export type MailClientServers = Schema<'MailClientServers'>;
/** A webhook endpoint; `secret` only in the answer of a create without a secret of the caller's. */
export type Webhook = Schema<'CreatedWebhook'>;
export type WebhookDelivery = Schema<'WebhookDelivery'>;
export type ListEntry = Schema<'ListEntry'>;
export type Suppression = Schema<'Suppression'>;
export type Member = Schema<'Member'>;
export type AuditEntry = Schema<'AuditEntry'>;
/** A workspace's retention periods (days; null = never). */
export type Retention = Schema<'Retention'>;

/** An event name of the API (docs/api.md, Events). */
export type EventType = Schema<'Webhook'>['event_types'][number];
/** The event names a webhook may filter on and be tested with: every one but `message.delivered`, never emitted. */
export const EVENT_TYPES = everyOf<Exclude<EventType, 'message.delivered'>>()([
  'message.received',
  'message.sent',
  'message.accepted',
  'message.failed',
  'message.bounced',
  'message.rejected',
  'message.complained',
  'message.unsubscribed',
  'message.cancelled',
  'domain.verified',
  'webhook.disabled',
]);
