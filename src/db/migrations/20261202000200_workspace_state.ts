import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * A workspace's state: `active`, `suspended` by the operator (its credentials answer 403, its queued work is held)
 * or `deleting` (it behaves as gone while its rows are deleted in batches). The reason and time of the last change
 * are kept for the operator's listing. The partial index holds the few workspaces that are not active: what every
 * job claim leaves out.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('workspaces').addColumn('state', 'text', (c) => c.notNull().defaultTo('active')).execute();
  await db.schema.alterTable('workspaces').addColumn('state_reason', 'text').execute();
  await db.schema.alterTable('workspaces').addColumn('state_changed_at', 'bigint').execute();
  await db.schema.createIndex('workspaces_held_idx').on('workspaces').columns(['id', 'state']).where(sql.ref('state'), '<>', sql.lit('active')).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('workspaces_held_idx').execute();
  await db.schema.alterTable('workspaces').dropColumn('state_changed_at').execute();
  await db.schema.alterTable('workspaces').dropColumn('state_reason').execute();
  await db.schema.alterTable('workspaces').dropColumn('state').execute();
}
