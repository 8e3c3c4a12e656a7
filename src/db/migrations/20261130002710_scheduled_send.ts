import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Scheduled send: an outbound message may wait for its `send_at` (status `scheduled`), and is
 * cancelled or rescheduled through its delivery job, whose id the outbound row now keeps (no index on the jobs'
 * payload needed to find it). Rows written before have neither: sent at once, their job found by nobody.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').addColumn('send_at', 'bigint').execute();
  await db.schema.alterTable('outbound').addColumn('job_id', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('outbound').dropColumn('job_id').execute();
  await db.schema.alterTable('outbound').dropColumn('send_at').execute();
}
