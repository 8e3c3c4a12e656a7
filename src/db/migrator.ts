import { Migrator, type Migration, type MigrationProvider, type MigrationResult } from 'kysely';
import type { Db } from './database.js';
import * as m20261121000100 from './migrations/20261121000100_tenancy.js';
import * as m20261121000200 from './migrations/20261121000200_mailboxes.js';
import * as m20261121000300 from './migrations/20261121000300_jobs_and_events.js';
import * as m20261121000400 from './migrations/20261121000400_messages.js';
import * as m20261121000500 from './migrations/20261121000500_sending.js';
import * as m20261121000600 from './migrations/20261121000600_transactional.js';
import * as m20261121000700 from './migrations/20261121000700_webhooks.js';
import * as m20261124000100 from './migrations/20261124000100_folder_modseq.js';
import * as m20261124000200 from './migrations/20261124000200_content_compression.js';
import * as m20261124000300 from './migrations/20261124000300_outbound_workspace_index.js';
import * as m20261126000500 from './migrations/20261126000500_secret_key_check.js';
import * as m20261126002200 from './migrations/20261126002200_request_counts.js';
import * as m20261126235000 from './migrations/20261126235000_event_order.js';
import * as m20261127000100 from './migrations/20261127000100_message_search.js';
import * as m20261127000200 from './migrations/20261127000200_events_workspace_index.js';
import * as m20261127000300 from './migrations/20261127000300_search_statistics.js';
import * as m20261128000100 from './migrations/20261128000100_api_key_names.js';
import * as m20261129002600 from './migrations/20261129002600_sandbox.js';
import * as m20261130002720 from './migrations/20261130002720_suppressions.js';
import * as m20261130002730 from './migrations/20261130002730_webhook_recovery.js';
import * as m20261201003470 from './migrations/20261201003470_login_failures_client.js';
import * as m20261130002710 from './migrations/20261130002710_scheduled_send.js';
import * as m20261130002700 from './migrations/20261130002700_draft_attachments.js';
import * as m20261201003700 from './migrations/20261201003700_search_workspace_tags.js';

import * as m20261201003400 from './migrations/20261201003400_fair_queue.js';
import * as m20261202000200 from './migrations/20261202000200_workspace_state.js';
import * as m20261202000100 from './migrations/20261202000100_quotas.js';
import * as m20261202000400 from './migrations/20261202000400_audit_log.js';
import * as m20261210000200 from './migrations/20261210000200_app_passwords.js';
import * as m20261202000300 from './migrations/20261202000300_retention.js';
import * as m20261210000100 from './migrations/20261210000100_mail_uids.js';
import * as m20261210000300 from './migrations/20261210000300_tls_certificates.js';
import * as m20261211000100 from './migrations/20261211000100_message_structures.js';
import * as m20261211000300 from './migrations/20261211000300_draft_sources.js';
import * as m20261211000400 from './migrations/20261211000400_message_structures_one_value.js';
import * as m20261212000100 from './migrations/20261212000100_message_spam.js';
import * as m20261212000200 from './migrations/20261212000200_outbound_list_unsubscribe.js';
import * as m20261212000300 from './migrations/20261212000300_domain_reports.js';
import * as m20261212000400 from './migrations/20261212000400_domain_return_path.js';
import * as m20261212000600 from './migrations/20261212000600_outbound_delivery_notification.js';
import * as m20261213000300 from './migrations/20261213000300_mailbox_signature.js';
import * as m20261213000400 from './migrations/20261213000400_messages_thread_folder_index.js';
import * as m20261213000500 from './migrations/20261213000500_outbound_in_reply_to.js';
import * as m20261213000600 from './migrations/20261213000600_label_definitions.js';
import * as m20261213000900 from './migrations/20261213000900_messages_from_address.js';
import * as m20261213001000 from './migrations/20261213001000_search_pending_limit.js';

/**
 * Migrations are compiled into the program (no directory scan), named by timestamp, and applied in
 * name order. On PostgreSQL Kysely's migrator holds an advisory lock while it runs, so any number of
 * processes may start at once; SQLite is the single-process embedded mode (one connection, no lock needed).
 */
const MIGRATIONS: Record<string, Migration> = {
  '20261121000100_tenancy': m20261121000100,
  '20261121000200_mailboxes': m20261121000200,
  '20261121000300_jobs_and_events': m20261121000300,
  '20261121000400_messages': m20261121000400,
  '20261121000500_sending': m20261121000500,
  '20261121000600_transactional': m20261121000600,
  '20261121000700_webhooks': m20261121000700,
  '20261124000100_folder_modseq': m20261124000100,
  '20261124000200_content_compression': m20261124000200,
  '20261124000300_outbound_workspace_index': m20261124000300,
  '20261126000500_secret_key_check': m20261126000500,
  '20261126002200_request_counts': m20261126002200,
  '20261126235000_event_order': m20261126235000,
  '20261127000100_message_search': m20261127000100,
  '20261127000200_events_workspace_index': m20261127000200,
  '20261127000300_search_statistics': m20261127000300,
  '20261128000100_api_key_names': m20261128000100,
  '20261129002600_sandbox': m20261129002600,
  '20261130002720_suppressions': m20261130002720,
  '20261130002730_webhook_recovery': m20261130002730,
  '20261201003470_login_failures_client': m20261201003470,
  '20261130002710_scheduled_send': m20261130002710,
  '20261130002700_draft_attachments': m20261130002700,
  '20261201003700_search_workspace_tags': m20261201003700,

  '20261201003400_fair_queue': m20261201003400,
  '20261202000200_workspace_state': m20261202000200,
  '20261202000100_quotas': m20261202000100,
  '20261202000400_audit_log': m20261202000400,
  '20261210000200_app_passwords': m20261210000200,
  '20261202000300_retention': m20261202000300,
  '20261210000100_mail_uids': m20261210000100,
  '20261210000300_tls_certificates': m20261210000300,
  '20261211000100_message_structures': m20261211000100,
  '20261211000300_draft_sources': m20261211000300,
  '20261211000400_message_structures_one_value': m20261211000400,
  '20261212000100_message_spam': m20261212000100,
  '20261212000200_outbound_list_unsubscribe': m20261212000200,
  '20261212000300_domain_reports': m20261212000300,
  '20261212000400_domain_return_path': m20261212000400,
  '20261212000600_outbound_delivery_notification': m20261212000600,
  '20261213000300_mailbox_signature': m20261213000300,
  '20261213000400_messages_thread_folder_index': m20261213000400,
  '20261213000500_outbound_in_reply_to': m20261213000500,
  '20261213000600_label_definitions': m20261213000600,
  '20261213000900_messages_from_address': m20261213000900,
  '20261213001000_search_pending_limit': m20261213001000,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/** Kysely's migrator over the compiled migrations (tests step one back and forth with it). */
export const createMigrator = (db: Db): Migrator => new Migrator({ db, provider });

/** Apply every pending migration; returns the names applied now. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = createMigrator(db);
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r: MigrationResult) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${String((error as Error).message ?? error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** The names of the migrations this build knows (a restore refuses a database that has others: a newer version's). */
export function knownMigrationNames(): string[] {
  return Object.keys(MIGRATIONS).sort();
}

/** The names of the migrations this program knows that the database has not applied (readiness: none). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const known = await createMigrator(db).getMigrations();
  return known.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
