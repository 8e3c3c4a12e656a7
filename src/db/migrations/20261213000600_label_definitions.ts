import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Labels a workspace defined (a colour for now), keyed by name as messages carry it; they end with their workspace.
 * `messages_unread_idx` holds only unread messages, newest first per workspace: the labels' unread counts walk it
 * (a bounded number of its newest entries) instead of every message a label is on; `messages_flagged_idx` holds only
 * starred ones, which the Starred list pages and counts.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('label_definitions')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('colour', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('label_definitions_pk', ['workspace_id', 'name'])
    .execute();
  await db.schema.createIndex('messages_flagged_idx').on('messages').columns(['workspace_id', 'created_at']).where(sql.ref('flagged'), '=', 1).execute();
  await db.schema.createIndex('messages_unread_idx').on('messages').columns(['workspace_id', 'created_at']).where(sql.ref('read'), '=', 0).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('messages_unread_idx').execute();
  await db.schema.dropIndex('messages_flagged_idx').execute();
  await db.schema.dropTable('label_definitions').execute();
}
