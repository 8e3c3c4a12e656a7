import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Drop `outbound_workspace_idx` (workspace_id, created_at): no query reads outbound rows by workspace
 * (each is found by its message's id, the primary key, with the workspace as a second condition), a
 * workspace's rows go with its messages (ON DELETE CASCADE on message_id), and every send paid for the
 * index. On PostgreSQL it was also a wrong choice within reach: a generic plan made while the table was
 * small looked a delivery's row up through it and filtered the workspace's rows by message id.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('outbound_workspace_idx').ifExists().execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.createIndex('outbound_workspace_idx').ifNotExists().on('outbound').columns(['workspace_id', 'created_at']).execute();
}
