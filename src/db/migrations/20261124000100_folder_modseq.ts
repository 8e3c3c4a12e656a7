import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * A folder's modification sequence: raised by one in every transaction step that changes a message of the
 * folder (stored, read, moved in or out, labelled, deleted), together with its counters. A page of one
 * mailbox is unchanged as long as the sum over its folders is (see transports/http/page-cache.ts).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('folder_counts')
    .addColumn('modseq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('folder_counts').dropColumn('modseq').execute();
}
