import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * App passwords: one credential per mail client and mailbox. Each ends with its workspace, its mailbox or the user who
 * made it (cascades). Read by mailbox (a login lists the mailbox's few passwords), by workspace (the listing), by id.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('app_passwords')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('app_passwords_mailbox_idx').on('app_passwords').columns(['mailbox_id']).execute();
  await db.schema.createIndex('app_passwords_workspace_idx').on('app_passwords').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('app_passwords_user_idx').on('app_passwords').columns(['user_id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('app_passwords').execute();
}
