import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    // JSON array of event names; [] = every event.
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull())
    // `whsec_…`, the HMAC key of the signatures (it must be readable to sign, so it is not hashed).
    .addColumn('secret', 'text')
    // JSON array of {secret, until}: secrets replaced less than 24 hours ago, still signed with until then.
    .addColumn('previous_secrets', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Fan-out reads the active endpoints of one workspace for every event.
  await db.schema.createIndex('webhooks_workspace_idx').on('webhooks').columns(['workspace_id', 'active']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_deliveries_list_idx').on('webhook_deliveries').columns(['webhook_id', 'delivered_at', 'id']).execute();

  // Jobs of one group (a webhook endpoint) are limited in how many run at once, and removed together.
  await db.schema.alterTable('jobs').addColumn('group_key', 'text').execute();
  await db.schema.createIndex('jobs_group_idx').on('jobs').columns(['queue', 'group_key']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('jobs_group_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('group_key').execute();
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhooks').execute();
}
