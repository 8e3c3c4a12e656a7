import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `message_spam`: rspamd's verdict on an inbound message (score, action, its highest-scoring symbols as JSON),
 * written with the message when it was scored; a message without a row was not scored. The row goes with its
 * message (the foreign key cascades), as its contents do.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('message_spam')
    .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('symbols_json', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('message_spam').execute();
}
