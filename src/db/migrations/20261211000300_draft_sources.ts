import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Drafts as IMAP's Drafts mailbox shows them (decisions 630-639): each draft's MIME source (`raw`, as a client
 * saved it or as rendered from its fields), its size, its UID in the mailbox's 'drafts' folder counter (null until
 * it has a source: drafts made before this migration get one when a client first opens Drafts), its modseq, and
 * its IMAP flags and keywords under the names the messages table uses.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('drafts').addColumn('raw', binaryColumnType(db)).execute();
  await db.schema.alterTable('drafts').addColumn('uid', 'bigint').execute();
  for (const column of ['size', 'modseq', 'read', 'flagged', 'answered', 'deleted']) {
    await db.schema.alterTable('drafts').addColumn(column, column === 'modseq' ? 'bigint' : 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  await db.schema.alterTable('drafts').addColumn('labels', 'text', (c) => c.notNull().defaultTo('[]')).execute();
  await db.schema.createIndex('drafts_uid_idx').on('drafts').columns(['mailbox_id', 'uid']).unique().execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('drafts_uid_idx').execute();
  for (const column of ['labels', 'deleted', 'answered', 'flagged', 'read', 'modseq', 'size', 'uid', 'raw']) await db.schema.alterTable('drafts').dropColumn(column).execute();
}
