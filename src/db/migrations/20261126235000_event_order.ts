import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * The order the event stream reads in (decision 230). PostgreSQL: the id of the transaction that wrote
 * the event and a sequence number; rows older than the oldest running transaction can no longer gain a
 * predecessor, so a reader that stops there never skips a late commit. SQLite has one writer: its
 * rowid already follows commit order, and an index on the workspace walks it.
 */
export async function up(db: AnyDb): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema.alterTable('events').addColumn('seq', 'bigserial', (c) => c.notNull()).execute();
    await db.schema
      .alterTable('events')
      .addColumn('txid', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
      .execute();
    await db.schema.createIndex('events_stream_idx').on('events').columns(['workspace_id', 'txid', 'seq']).execute();
  } else {
    await db.schema.createIndex('events_stream_idx').on('events').column('workspace_id').execute();
  }
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('events_stream_idx').execute();
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema.alterTable('events').dropColumn('txid').execute();
    await db.schema.alterTable('events').dropColumn('seq').execute();
  }
}
