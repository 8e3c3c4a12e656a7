import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * PostgreSQL: the search index's pending list may grow to 16 MiB (4 MiB by default) before an insert merges it
 * itself. Serving processes merge it every second on their own connections (mail/search-pending.ts), so the limit
 * is only the fallback when none is running; raised, an insert that reaches it is rarer.
 */
export async function up(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter index message_contents_search_idx set (gin_pending_list_limit = 16384)`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter index message_contents_search_idx reset (gin_pending_list_limit)`.execute(db);
}
