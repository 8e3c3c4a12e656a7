import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { foldCase } from '../../lib/mail-text.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/** Rows read and written at a time where the database cannot fold an address as the query does. */
const BATCH = 500;

/**
 * Addresses with a character past U+007F, folded again in JS: the databases' `lower` folds ASCII alike, but beyond it
 * follows the database's locale (SQLite's not at all) and knows no NFKC. Few addresses have one, so a keyset walk.
 */
async function refoldNonAscii(db: AnyDb, postgres: boolean): Promise<void> {
  const nonAscii = postgres ? sql<boolean>`length(from_address) <> octet_length(from_address)` : sql<boolean>`length(from_address) <> length(cast(from_address as blob))`;
  for (let after = ''; ; ) {
    const rows = (await db.selectFrom('messages').select(['id', 'from_json']).where(nonAscii).where('id', '>', after).orderBy('id').limit(BATCH).execute()) as Array<{ id: string; from_json: string }>;
    for (const row of rows) {
      const from = JSON.parse(row.from_json) as { address: string } | null;
      await db.updateTable('messages').set({ from_address: from ? foldCase(from.address) : '' }).where('id', '=', row.id).execute();
    }
    if (rows.length < BATCH) return;
    after = rows[rows.length - 1]!.id;
  }
}

/**
 * `messages.from_address`: the sender's address as a search query holds it, and `(workspace_id, from_address,
 * created_at, id)`, so that `from:alice@example.com` walks that sender's messages newest first instead of matching
 * the address's words in the full-text index (one of them, the domain's last label, is in nearly every message).
 */
export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema.alterTable('messages').addColumn('from_address', 'text', (c) => c.notNull().defaultTo('')).execute();
  const address = postgres ? sql`from_json::json ->> 'address'` : sql`json_extract(from_json, '$.address')`;
  await sql`update messages set from_address = lower(coalesce(${address}, '')) where from_json <> 'null'`.execute(db);
  await refoldNonAscii(db, postgres);
  await db.schema.createIndex('messages_sender_idx').on('messages').columns(['workspace_id', 'from_address', 'created_at', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('messages_sender_idx').execute();
  await db.schema.alterTable('messages').dropColumn('from_address').execute();
}
