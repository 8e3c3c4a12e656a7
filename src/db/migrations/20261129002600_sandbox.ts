import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Sandbox mode: the DNS records workspaces publish to the sandbox's DNS server, the outbound mail
 * it captured instead of delivering, and catch-all mailboxes. The tables exist in every database; only a service
 * started with --sandbox reads or writes them.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sandbox_dns_records')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // Lower case, without the final dot.
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The DNS server answers by name, whoever published it; a workspace lists and replaces its own.
  await db.schema.createIndex('sandbox_dns_records_name_idx').on('sandbox_dns_records').columns(['name', 'type']).execute();
  await db.schema.createIndex('sandbox_dns_records_workspace_idx').on('sandbox_dns_records').columns(['workspace_id', 'name', 'type']).execute();

  await db.schema
    .createTable('sandbox_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // The outbound message (msg_…) this is a copy of; no foreign key: deleting the sent copy keeps the capture.
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('mail_from', 'text', (c) => c.notNull())
    // JSON: the envelope recipients of this transaction.
    .addColumn('recipients_json', 'text', (c) => c.notNull())
    // JSON: [{address, message_id}] the copies stored in this service's own mailboxes.
    .addColumn('stored_json', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('raw', binaryColumnType(db), (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_messages_list_idx').on('sandbox_messages').columns(['workspace_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('sandbox_catch_alls')
    // One catch-all per domain, service-wide: mail to an unknown address of it has one place to go.
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_catch_alls_workspace_idx').on('sandbox_catch_alls').columns(['workspace_id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('sandbox_catch_alls').execute();
  await db.schema.dropTable('sandbox_messages').execute();
  await db.schema.dropTable('sandbox_dns_records').execute();
}
