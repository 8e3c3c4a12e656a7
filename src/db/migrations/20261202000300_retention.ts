import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/** A SQLite file at most this large is rewritten (VACUUM) here to make its space reclaimable; a larger one by `mailroom admin vacuum`. */
const VACUUM_AT_MIGRATE_BYTES = 64 * 1024 * 1024;

/**
 * Retention (decisions 470-479): a workspace's own periods for `trash` and `spam` (null = the operator's default,
 * 0 = never), and the indexes the sweep walks. Each folder's index is partial, so only the messages in it are indexed
 * (the sweep names the folder as a literal, which both databases need to choose such an index). Drafts get an index
 * on the message they answer: the sweep keeps such a message.
 *
 * SQLite: `auto_vacuum = INCREMENTAL` lets the sweep give freed pages back to the file system. The mode takes effect
 * only when the file is rebuilt; a new or small database is rebuilt here, a larger one keeps its mode until the
 * operator runs `mailroom admin vacuum` (which may take minutes and twice the file's space).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('mail_retention')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
    .addColumn('trash_days', 'integer')
    .addColumn('spam_days', 'integer')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  for (const folder of ['trash', 'spam']) {
    await db.schema
      .createIndex(`messages_${folder}_age_idx`)
      .on('messages')
      .columns(['updated_at', 'id', 'workspace_id'])
      .where(sql.ref('folder'), '=', sql.lit(folder))
      .execute();
  }
  await db.schema.createIndex('drafts_reply_idx').on('drafts').columns(['workspace_id', 'in_reply_to']).execute();
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await sql`pragma auto_vacuum = incremental`.execute(db);
  const size = await sql<{ bytes: number }>`select page_count * page_size as bytes from pragma_page_count(), pragma_page_size()`.execute(db);
  // Kysely runs SQLite migrations outside a transaction (no transactional DDL there), where VACUUM may run.
  if (Number(size.rows[0]?.bytes ?? 0) <= VACUUM_AT_MIGRATE_BYTES) await sql`vacuum`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('drafts_reply_idx').execute();
  for (const folder of ['trash', 'spam']) await db.schema.dropIndex(`messages_${folder}_age_idx`).execute();
  await db.schema.dropTable('mail_retention').execute();
}
