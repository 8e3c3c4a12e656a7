import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * A fair queue: claims count the jobs running per workspace and per group from the leased rows (so caps hold
 * across worker processes), workspaces' pending jobs are counted for the pending caps, and a job may carry a
 * dedup key of which at most one pending job exists (a webhook delivery: endpoint and event). Jobs written before
 * keep a null key: they drain as they are.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('dedup_key', 'text').execute();
  await db.schema
    .createIndex('jobs_dedup_idx')
    .on('jobs')
    .columns(['queue', 'dedup_key'])
    .unique()
    .where((eb) => eb.and([eb(sql.ref('dedup_key'), 'is not', null), eb(sql.ref('state'), '=', sql.lit('pending'))]))
    .execute();
  // Only leased rows: what every claim counts as running.
  await db.schema.createIndex('jobs_leased_idx').on('jobs').columns(['queue', 'workspace_id', 'group_key']).where(sql.ref('lease_token'), 'is not', null).execute();
  await db.schema.createIndex('jobs_workspace_idx').on('jobs').columns(['queue', 'workspace_id', 'state']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('jobs_workspace_idx').execute();
  await db.schema.dropIndex('jobs_leased_idx').execute();
  await db.schema.dropIndex('jobs_dedup_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('dedup_key').execute();
}
