import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Quotas per workspace and what they are counted against:
 * - `workspace_quotas`: the operator's settings, one row per workspace and quota (`value` null = unlimited); a
 *   quota without a row takes the service-wide default (MAILROOM_QUOTA_*).
 * - `quota_send_counts`: messages sent per workspace and clock hour. On PostgreSQL UNLOGGED, as request_counts:
 *   a counter is worth no WAL write, and a crash that empties it only forgives a day of counting.
 * - `folder_counts.bytes`: the bytes (raw size) of a folder's messages, kept by the mail store beside the folder's
 *   other counters in the same statement, so a workspace's stored bytes are a sum over its folder rows.
 */
export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('workspace_quotas')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('workspace_quotas_pk', ['workspace_id', 'name'])
    .execute();
  await db.schema
    .createTable('quota_send_counts')
    .$call((t) => (postgres ? t.modifyFront(sql`unlogged`) : t))
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('sent', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('quota_send_counts_pk', ['workspace_id', 'window_start'])
    .execute();

  await db.schema.alterTable('folder_counts').addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db
    .updateTable('folder_counts')
    .set((eb) => ({
      bytes: eb
        .selectFrom('messages')
        .select((m) => m.fn.coalesce(m.fn.sum('messages.size'), m.lit(0)).as('bytes'))
        .whereRef('messages.mailbox_id', '=', 'folder_counts.mailbox_id')
        .whereRef('messages.folder', '=', 'folder_counts.folder'),
    }))
    .execute();
  await db.schema.createIndex('folder_counts_workspace_idx').on('folder_counts').column('workspace_id').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('folder_counts_workspace_idx').execute();
  await db.schema.alterTable('folder_counts').dropColumn('bytes').execute();
  await db.schema.dropTable('quota_send_counts').execute();
  await db.schema.dropTable('workspace_quotas').execute();
}
