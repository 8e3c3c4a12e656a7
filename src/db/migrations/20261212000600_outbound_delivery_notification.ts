import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `outbound.delivery_notification`: 1 when the send asked for delivery notification. The delivery worker then asks
 * receivers that offer DSN (RFC 3461) to report success as well as failure to the message's return path.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').addColumn('delivery_notification', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').dropColumn('delivery_notification').execute();
}
