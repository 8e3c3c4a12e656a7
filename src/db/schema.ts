import type { JobTable } from '../jobs/job.table.js';
import type { EventTable } from '../modules/events/event.table.js';
import type { SendingDomainTable, ServiceKeyTable } from '../modules/domains/domain.table.js';
import type { OutboundTable } from '../modules/mail/outbound.table.js';
import type { DraftAttachmentTable, DraftTable } from '../modules/mail/draft.table.js';
import type { IdempotencyKeyTable, ServiceTokenTable } from '../modules/transactional/transactional.table.js';
import type { ListEntryTable } from '../modules/lists/list.table.js';
import type { SandboxCatchAllTable, SandboxDnsRecordTable, SandboxMessageTable } from '../modules/sandbox/sandbox.table.js';
import type { SuppressionTable } from '../modules/mail/suppression.table.js';
import type { SecretKeyCheckTable } from '../modules/secrets/secret-key.table.js';
import type { WebhookDeliveryTable, WebhookTable } from '../modules/webhooks/webhook.table.js';
import type { MailTables } from '../modules/mail/mail.table.js';
import type {
  ApiKeyTable,
  LoginFailureTable,
  MembershipTable,
  RequestCountTable,
  SessionTable,
  UserTable,
  WorkspaceTable,
} from '../modules/tenancy/tenancy.table.js';

/**
 * Every table, as Kysely sees it: the union of the modules' table sets (row types live beside the module that
 * owns them). Used by src/db, migrations, the composition (services.ts) and tests; a module sees its own set only.
 */
export interface Database extends MailTables {
  workspaces: WorkspaceTable;
  users: UserTable;
  memberships: MembershipTable;
  api_keys: ApiKeyTable;
  sessions: SessionTable;
  login_failures: LoginFailureTable;
  request_counts: RequestCountTable;
  events: EventTable;
  jobs: JobTable;
  list_entries: ListEntryTable;
  sending_domains: SendingDomainTable;
  service_keys: ServiceKeyTable;
  service_tokens: ServiceTokenTable;
  idempotency_keys: IdempotencyKeyTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  secret_key_check: SecretKeyCheckTable;
  sandbox_dns_records: SandboxDnsRecordTable;
  sandbox_messages: SandboxMessageTable;
  sandbox_catch_alls: SandboxCatchAllTable;
}
