// The session API's answers as the client reads them. For the resources this server has, they are the
// service's own view types: type-only imports, so nothing of the service is loaded at run time, and a field
// the server renames breaks the client's build instead of its output.

export type { AttachmentView as Attachment, MessageListView as Message, MessageView as MessageDetail, ThreadDetailView as ThreadDetail, ThreadView as Thread } from '../../modules/messages/message.types.js';
export type { MailboxView as Mailbox } from '../../modules/mailboxes/mailbox.types.js';
export type { DraftView as Draft } from '../../modules/sending/draft.service.js';
export type { Queued, SentItem as SentMessage } from '../../modules/sending/sending.service.js';
export type { ListEntryView as ListEntry } from '../../modules/lists/list.service.js';
export type { CheckedDomainView as CheckedDomain, CreatedDomainView, RecordCheck, SendingDomainView as SendingDomain } from '../../modules/domains/domain.types.js';
import type { ServiceTokenView } from '../../modules/transactional/service-token.service.js';
export type { CreatedWebhookView as CreatedWebhook, DeliveryView as WebhookDelivery, WebhookView as Webhook } from '../../modules/webhooks/webhook.types.js';
export type {
  ApiKeyView as ApiKey,
  ApiKeyWithSecret as CreatedApiKey,
  LoginView as LoginAnswer,
  MemberView as Member,
  PasswordChangeView as PasswordChanged,
  SessionView as SessionInfo,
  WorkspaceMembershipView as WorkspaceMembership,
} from '../../modules/tenancy/tenancy.types.js';

/** What every paginated list answer carries beside its items. */
export interface Page {
  total: number;
  limit: number;
  offset: number;
}

/** A DNS record to publish, as the sending-domain answers give them. */
export interface DnsRecord {
  record_name: string;
  record_type: string;
  record_value: string;
}

/** A service token; `token` (the credential) is only in the answers to create and rotate. */
export type ServiceToken = ServiceTokenView & { token?: string };
