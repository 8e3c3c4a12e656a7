import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  // Service tokens (mst_…): one workspace, one verified sending domain, one mailbox in it, scope message:send.
  await db.schema
    .createTable('service_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('domain_id', 'text', (c) => c.notNull().references('sending_domains.id').onDelete('cascade'))
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    // SHA-256 of the current credential; rotation replaces it (the old credential stops working at once).
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('service_tokens_workspace_idx').on('service_tokens').columns(['workspace_id', 'created_at', 'id']).execute();

  // One row per (token, Idempotency-Key): the canonical request's hash and the 202 body it answered.
  // message_id is written first (the key is claimed before the message exists), so it is no foreign key.
  // Keyed by the token id, not its credential, so a rotation keeps every earlier key's replay.
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('token_id', 'text', (c) => c.notNull().references('service_tokens.id').onDelete('cascade'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('response_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['token_id', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_message_idx').on('idempotency_keys').columns(['message_id']).unique().execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['idempotency_keys', 'service_tokens']) await db.schema.dropTable(table).execute();
}
