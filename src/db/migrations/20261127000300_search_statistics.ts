import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Words whose frequency ANALYZE keeps for `search_document` (PostgreSQL keeps 10 × this many). With the default (100)
 * every word outside the most common 1,000 is estimated as fairly common, so a search for a rare word walks the
 * workspace's messages newest first for 50 matches that are spread over the whole table, instead of reading its few
 * matches from the GIN index. Words common enough to be tracked either way still take the walk, which serves them best.
 */
const SEARCH_STATISTICS_TARGET = 1000;

/** A larger statistics target for the search document (the search bench); SQLite's FTS5 has no planner to inform. */
export async function up(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table message_contents alter column search_document set statistics ${sql.lit(SEARCH_STATISTICS_TARGET)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table message_contents alter column search_document set statistics -1`.execute(db);
}
