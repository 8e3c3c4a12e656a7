import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Per-minute request counters of the HTTP rate limit, one row per bucket and window, shared by every
 * api process. On PostgreSQL the table is UNLOGGED: a counter is worth no WAL write or fsync, and a
 * crash that empties the table only forgives one minute of counting.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('request_counts')
    .$call((t) => (db.getExecutor().adapter instanceof PostgresAdapter ? t.modifyFront(sql`unlogged`) : t))
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('hits', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_counts_pk', ['bucket', 'window_start'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('request_counts').execute();
}
