import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `outbound.list_unsubscribe`: 1 when the send asked for one-click unsubscribe (RFC 8058). The delivery worker then
 * gives each recipient's copy its own List-Unsubscribe fields; the stored source stays one for all recipients.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').addColumn('list_unsubscribe', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').dropColumn('list_unsubscribe').execute();
}
