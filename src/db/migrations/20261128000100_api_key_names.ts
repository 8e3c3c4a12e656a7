import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Workspace admins list, create and revoke their API keys from the session surface: a key gets a
 * label for people, and the list of one workspace's keys is read by its own index (decision 239).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('name', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.createIndex('api_keys_workspace_idx').on('api_keys').columns(['workspace_id', 'created_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('api_keys_workspace_idx').execute();
  await db.schema.alterTable('api_keys').dropColumn('name').execute();
}
