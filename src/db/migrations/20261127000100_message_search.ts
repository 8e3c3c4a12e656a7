import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { searchDocumentOf, tsvectorOf, type SearchDocument } from '../../lib/mail-text.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/** Messages read and indexed at a time when indexing mail stored before this migration. */
const BATCH = 500;

interface StoredMessage {
  id: string;
  workspace_id: string;
  subject: string;
  from_json: string;
  to_json: string;
  cc_json: string;
  attachments_json: string;
  text_body: string | null;
  html_body: string | null;
}

const documentOf = (row: StoredMessage): SearchDocument =>
  searchDocumentOf({
    subject: row.subject,
    from: JSON.parse(row.from_json) as { name: string; address: string } | null,
    to: JSON.parse(row.to_json) as Array<{ name: string; address: string }>,
    cc: JSON.parse(row.cc_json) as Array<{ name: string; address: string }>,
    text: row.text_body,
    html: row.html_body,
    attachments: JSON.parse(row.attachments_json) as Array<{ filename: string }>,
  });

/** Index every message stored before, in batches, with the words the store would give it now. */
async function indexStored(db: AnyDb, write: (row: StoredMessage, doc: SearchDocument) => Promise<void>): Promise<void> {
  for (let after = ''; ; ) {
    const rows = (await db
      .selectFrom('messages')
      .leftJoin('message_contents', 'message_contents.message_id', 'messages.id')
      .select(['messages.id', 'messages.workspace_id', 'subject', 'from_json', 'to_json', 'cc_json', 'attachments_json', 'text_body', 'html_body'])
      .where('messages.id', '>', after)
      .orderBy('messages.id')
      .limit(BATCH)
      .execute()) as StoredMessage[];
    for (const row of rows) await write(row, documentOf(row));
    if (rows.length < BATCH) return;
    after = rows[rows.length - 1]!.id;
  }
}

/**
 * The full-text index (decision 233). PostgreSQL: a `tsvector` beside the message's bodies, with a GIN
 * index. SQLite: a contentless FTS5 table whose rows are keyed by `message_fts_keys` (an INTEGER PRIMARY KEY, which
 * VACUUM keeps, unlike the rowid of `messages`); deleting a message deletes its key (a foreign key) and the key's
 * trigger its FTS row, so every delete and cascade keeps the index true inside its own transaction.
 */
export async function up(db: AnyDb): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema.alterTable('message_contents').addColumn('search_document', sql`tsvector`).execute();
    await indexStored(db, async (row, doc) => {
      await db.updateTable('message_contents').set({ search_document: tsvectorOf(doc) }).where('message_id', '=', row.id).execute();
    });
    await sql`create index message_contents_search_idx on message_contents using gin (search_document)`.execute(db);
    return;
  }
  await sql`create virtual table message_fts using fts5(subject, "from", "to", cc, filename, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0')`.execute(db);
  await db.schema
    .createTable('message_fts_keys')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('message_id', 'text', (c) => c.notNull().unique().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .execute();
  await sql`create trigger message_fts_keys_deleted after delete on message_fts_keys begin delete from message_fts where rowid = old.id; end`.execute(db);
  await indexStored(db, async (row, doc) => {
    const key = await db.insertInto('message_fts_keys').values({ message_id: row.id, workspace_id: row.workspace_id }).returning('id').executeTakeFirstOrThrow();
    await db.insertInto('message_fts').values({ rowid: key.id as number, ...doc }).execute();
  });
}

export async function down(db: AnyDb): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema.alterTable('message_contents').dropColumn('search_document').execute();
    return;
  }
  await db.schema.dropTable('message_fts_keys').execute();
  await db.schema.dropTable('message_fts').execute();
}
