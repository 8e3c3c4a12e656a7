import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `outbound.in_reply_to`: the message (our `message_id`) a send from a draft answered, null otherwise. A held or
 * scheduled message taken back as a draft (undo send) answers it again: the thread headers of the sent copy name an
 * Internet Message-ID, which several stored messages may share.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').addColumn('in_reply_to', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').dropColumn('in_reply_to').execute();
}
