import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Webhook recovery: an endpoint remembers since when every attempt has failed (`failing_since`,
 * null after a success), and when and why it was disabled for that (decisions 350–352).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('webhooks').addColumn('failing_since', 'bigint').execute();
  await db.schema.alterTable('webhooks').addColumn('disabled_at', 'bigint').execute();
  await db.schema.alterTable('webhooks').addColumn('disabled_reason', 'text').execute();
  // `recover` asks, for a page of events, which the endpoint received.
  await db.schema.createIndex('webhook_deliveries_event_idx').on('webhook_deliveries').columns(['webhook_id', 'event_id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_event_idx').execute();
  await db.schema.alterTable('webhooks').dropColumn('disabled_reason').execute();
  await db.schema.alterTable('webhooks').dropColumn('disabled_at').execute();
  await db.schema.alterTable('webhooks').dropColumn('failing_since').execute();
}
