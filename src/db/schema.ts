import type { QueueTables } from '../jobs/job.table.js';
import type { AppPasswordTables } from '../modules/app-passwords/app-password.table.js';
import type { AuditTables } from '../modules/audit/audit.table.js';
import type { CertificateTables } from '../modules/certificates/certificate.table.js';
import type { DomainTables } from '../modules/domains/domain.table.js';
import type { EventTables } from '../modules/events/event.table.js';
import type { ListTables } from '../modules/lists/list.table.js';
import type { MailTables } from '../modules/mail/mail.table.js';
import type { SandboxTables } from '../modules/sandbox/sandbox.table.js';
import type { QuotaTables } from '../modules/quotas/quota.table.js';
import type { ReportTables } from '../modules/reports/report.table.js';
import type { SecretTables } from '../modules/secrets/secret-key.table.js';
import type { TenancyTables } from '../modules/tenancy/tenancy.table.js';
import type { TransactionalTables } from '../modules/transactional/transactional.table.js';
import type { WebhookTables } from '../modules/webhooks/webhook.table.js';

/**
 * Every table, as Kysely sees it: the union of the modules' table sets, each declared beside the module that owns
 * it. Only src/db, migrations, services.ts and tests use the whole; a store sees its own module's set (`tablesOf`).
 */
export interface Database
  extends MailTables,
    QueueTables,
    TenancyTables,
    EventTables,
    ListTables,
    DomainTables,
    TransactionalTables,
    WebhookTables,
    SecretTables,
    SandboxTables,
    QuotaTables,
    AuditTables,
    AppPasswordTables,
    CertificateTables,
    ReportTables {}
