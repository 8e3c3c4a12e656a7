import type { JobTable } from '../jobs/job.table.js';
import type { EventTable } from '../modules/events/event.table.js';
import type { SendingDomainTable, ServiceKeyTable } from '../modules/domains/domain.table.js';
import type { OutboundTable } from '../modules/mail/outbound.table.js';
import type { DraftAttachmentTable, DraftTable } from '../modules/mail/draft.table.js';
import type { IdempotencyKeyTable, ServiceTokenTable } from '../modules/transactional/transactional.table.js';
import type { ListEntryTable } from '../modules/lists/list.table.js';
import type { MailboxTable } from '../modules/mailboxes/mailbox.table.js';
import type { SandboxCatchAllTable, SandboxDnsRecordTable, SandboxMessageTable } from '../modules/sandbox/sandbox.table.js';
import type { SuppressionTable } from '../modules/mail/suppression.table.js';
import type { SecretKeyCheckTable } from '../modules/secrets/secret-key.table.js';
import type { WebhookDeliveryTable, WebhookTable } from '../modules/webhooks/webhook.table.js';
import type {
  AttachmentTable,
  FolderCountTable,
  MessageContentTable,
  MessageFtsKeyTable,
  MessageFtsTable,
  MessageLabelTable,
  MessageTable,
  ThreadRefTable,
  ThreadTable,
} from '../modules/messages/message.table.js';
import type {
  ApiKeyTable,
  LoginFailureTable,
  MembershipTable,
  RequestCountTable,
  SessionTable,
  UserTable,
  WorkspaceTable,
} from '../modules/tenancy/tenancy.table.js';

/** Every table, as Kysely sees it. Row types live beside the feature that owns them. */
export interface Database {
  workspaces: WorkspaceTable;
  users: UserTable;
  memberships: MembershipTable;
  api_keys: ApiKeyTable;
  sessions: SessionTable;
  login_failures: LoginFailureTable;
  request_counts: RequestCountTable;
  mailboxes: MailboxTable;
  events: EventTable;
  jobs: JobTable;
  threads: ThreadTable;
  messages: MessageTable;
  message_contents: MessageContentTable;
  message_fts: MessageFtsTable;
  message_fts_keys: MessageFtsKeyTable;
  attachments: AttachmentTable;
  message_labels: MessageLabelTable;
  thread_refs: ThreadRefTable;
  list_entries: ListEntryTable;
  suppressions: SuppressionTable;
  folder_counts: FolderCountTable;
  sending_domains: SendingDomainTable;
  service_keys: ServiceKeyTable;
  outbound: OutboundTable;
  drafts: DraftTable;
  draft_attachments: DraftAttachmentTable;
  service_tokens: ServiceTokenTable;
  idempotency_keys: IdempotencyKeyTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  secret_key_check: SecretKeyCheckTable;
  sandbox_dns_records: SandboxDnsRecordTable;
  sandbox_messages: SandboxMessageTable;
  sandbox_catch_alls: SandboxCatchAllTable;
}
