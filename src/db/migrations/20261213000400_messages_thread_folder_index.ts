import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `messages (thread_id, folder, created_at, id)`: a folder's conversation list keeps a message when no later one of
 * its thread is in the same folder, and counts a page's threads' messages in that folder; both are one probe here
 * instead of a walk over every message of the thread.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.createIndex('messages_thread_folder_idx').on('messages').columns(['thread_id', 'folder', 'created_at', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('messages_thread_folder_idx').execute();
}
