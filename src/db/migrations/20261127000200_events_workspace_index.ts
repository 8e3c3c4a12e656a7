import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `events_workspace_idx (workspace_id, created_at)` lost its last reader: events are read by id (webhooks) or in
 * stream order through `events_stream_idx`, which also serves the workspace cascade. One index fewer to write per
 * event (decision 238).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('events_workspace_idx').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.createIndex('events_workspace_idx').on('events').columns(['workspace_id', 'created_at']).execute();
}
