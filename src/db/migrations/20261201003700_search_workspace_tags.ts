import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { searchDocumentOf, taggedDocument, workspaceTag, type SearchDocument } from '../../lib/mail-text.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/** Keys read and indexed at a time. */
const BATCH = 500;

interface IndexedMessage {
  key: number;
  workspace_id: string;
  subject: string;
  from_json: string;
  to_json: string;
  cc_json: string;
  attachments_json: string;
  text_body: string | null;
  html_body: string | null;
}

const documentOf = (row: IndexedMessage): SearchDocument =>
  searchDocumentOf({
    subject: row.subject,
    from: JSON.parse(row.from_json) as { name: string; address: string } | null,
    to: JSON.parse(row.to_json) as Array<{ name: string; address: string }>,
    cc: JSON.parse(row.cc_json) as Array<{ name: string; address: string }>,
    text: row.text_body,
    html: row.html_body,
    attachments: JSON.parse(row.attachments_json) as Array<{ filename: string }>,
  });

/**
 * A new, empty FTS5 table (the key table and its delete trigger stay), then every key's row again: the index is
 * contentless, so the words are made anew from the stored message, `tag` deciding what goes before each.
 */
async function rebuild(db: AnyDb, tag: (workspaceId: string) => string | null): Promise<void> {
  await sql`drop table message_fts`.execute(db);
  await sql`create virtual table message_fts using fts5(subject, "from", "to", cc, filename, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0')`.execute(db);
  for (let after = -1; ; ) {
    const rows = (await db
      .selectFrom('message_fts_keys')
      .innerJoin('messages', 'messages.id', 'message_fts_keys.message_id')
      .leftJoin('message_contents', 'message_contents.message_id', 'messages.id')
      .select(['message_fts_keys.id as key', 'messages.workspace_id', 'subject', 'from_json', 'to_json', 'cc_json', 'attachments_json', 'text_body', 'html_body'])
      .where('message_fts_keys.id', '>', after)
      .orderBy('message_fts_keys.id')
      .limit(BATCH)
      .execute()) as IndexedMessage[];
    for (const row of rows) {
      const words = tag(row.workspace_id);
      const doc = documentOf(row);
      await db.insertInto('message_fts').values({ rowid: row.key, ...(words === null ? doc : taggedDocument(doc, words)) }).execute();
    }
    if (rows.length < BATCH) return;
    after = rows[rows.length - 1]!.key;
  }
}

/**
 * SQLite's index, rebuilt with every word behind its workspace's tag, so that one workspace's prefix queries walk
 * only its own words. PostgreSQL's GIN index is unchanged (its searches were never slowed by another's mail).
 */
export async function up(db: AnyDb): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await rebuild(db, workspaceTag);
}

export async function down(db: AnyDb): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await rebuild(db, () => null);
}
