import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * What mail clients (IMAP) need of the store (decisions 517-527):
 * - `folder_counts.uidnext` / `uidvalidity`: a folder's next UID and its UIDVALIDITY (seconds since the epoch when
 *   the counter row was made; the row lives as long as its mailbox, so the value never changes under a client).
 * - `messages.uid` / `modseq`: the message's UID in its folder and the folder's modseq at its last change; the flags
 *   `flagged`, `answered` and `deleted` (IMAP's \Flagged, \Answered, \Deleted).
 * - `mail_expunged`: each UID removed from a folder, with the folder's modseq then (QRESYNC's VANISHED).
 *
 * Existing messages get UIDs in (created_at, id) order per folder and every folder's modseq is raised by one, which
 * all its messages take: a client that synchronises for the first time sees every message as changed anyway.
 */
export async function up(db: AnyDb): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  await db.schema.alterTable('folder_counts').addColumn('uidnext', 'bigint', (c) => c.notNull().defaultTo(1)).execute();
  await db.schema.alterTable('folder_counts').addColumn('uidvalidity', 'bigint', (c) => c.notNull().defaultTo(now)).execute();
  for (const column of ['uid', 'modseq', 'flagged', 'answered', 'deleted']) {
    await db.schema.alterTable('messages').addColumn(column, column === 'uid' || column === 'modseq' ? 'bigint' : 'integer', (c) => c.notNull().defaultTo(0)).execute();
  }
  await backfill(db);
  await db.schema.createIndex('messages_uid_idx').on('messages').columns(['mailbox_id', 'folder', 'uid']).unique().execute();
  await db.schema
    .createTable('mail_expunged')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('folder', 'text', (c) => c.notNull())
    .addColumn('uid', 'bigint', (c) => c.notNull())
    .addColumn('modseq', 'bigint', (c) => c.notNull())
    .addColumn('expunged_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('mail_expunged_pk', ['mailbox_id', 'folder', 'uid'])
    .execute();
  await db.schema.createIndex('mail_expunged_modseq_idx').on('mail_expunged').columns(['mailbox_id', 'folder', 'modseq']).execute();
  await db.schema.createIndex('mail_expunged_age_idx').on('mail_expunged').columns(['expunged_at']).execute();
}

/** UIDs per folder in (created_at, id) order; every folder's modseq raised by one and given to its messages; uidnext past the last UID. */
async function backfill(db: AnyDb): Promise<void> {
  await db
    .updateTable('folder_counts')
    .set({ modseq: sql`${sql.ref('modseq')} + 1` })
    .execute();
  const numbered = db
    .selectFrom('messages')
    .select([
      'id',
      sql<number>`row_number() over (partition by ${sql.ref('mailbox_id')}, ${sql.ref('folder')} order by ${sql.ref('created_at')}, ${sql.ref('id')})`.as('n'),
    ])
    .as('numbered');
  await db
    .updateTable('messages')
    .from(numbered)
    .set((eb) => ({
      uid: eb.ref('numbered.n'),
      modseq: eb
        .selectFrom('folder_counts')
        .select('folder_counts.modseq')
        .whereRef('folder_counts.mailbox_id', '=', 'messages.mailbox_id')
        .whereRef('folder_counts.folder', '=', 'messages.folder'),
    }))
    .whereRef('messages.id', '=', 'numbered.id')
    .execute();
  await db
    .updateTable('folder_counts')
    .set((eb) => ({
      uidnext: eb.fn.coalesce(
        eb.selectFrom('messages').select((m) => m.fn.max('messages.uid').as('m')).whereRef('messages.mailbox_id', '=', 'folder_counts.mailbox_id').whereRef('messages.folder', '=', 'folder_counts.folder'),
        sql.lit(0),
      ),
    }))
    .execute();
  await db
    .updateTable('folder_counts')
    .set({ uidnext: sql`${sql.ref('uidnext')} + 1` })
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('mail_expunged').execute();
  await db.schema.dropIndex('messages_uid_idx').execute();
  for (const column of ['deleted', 'answered', 'flagged', 'modseq', 'uid']) await db.schema.alterTable('messages').dropColumn(column).execute();
  await db.schema.alterTable('folder_counts').dropColumn('uidvalidity').execute();
  await db.schema.alterTable('folder_counts').dropColumn('uidnext').execute();
}
