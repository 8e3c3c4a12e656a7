import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `mailboxes.signature_html`: the signature the web app puts under a new message or an answer from the mailbox
 * (HTML; null: none). It lives with the mailbox, so it goes when the mailbox goes.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('mailboxes').addColumn('signature_html', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('mailboxes').dropColumn('signature_html').execute();
}
