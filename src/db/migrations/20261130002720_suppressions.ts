import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Suppressions: the addresses a workspace no longer sends to, added by hard bounces and complaints
 * or by hand. The primary key is what a send looks up (workspace, address).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('suppressions')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('status_code', 'text')
    // No foreign key: deleting the sent copy keeps the suppression it caused.
    .addColumn('message_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('suppressions_pk', ['workspace_id', 'address'])
    .execute();
  // The list is read newest first, whole or by reason.
  await db.schema.createIndex('suppressions_list_idx').on('suppressions').columns(['workspace_id', 'created_at', 'address']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('suppressions').execute();
}
