import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `message_structures`: a message's ENVELOPE, BODYSTRUCTURE and BODY as IMAP FETCH writes them (decisions 600-604),
 * filled by the first FETCH that needs them, so later ones read these few bytes instead of parsing the raw message.
 * `version` is the serializer's (`STRUCTURE_VERSION`): another version's row is not served. The row goes with its
 * message (the foreign key cascades), as its contents do.
 */
export async function up(db: AnyDb): Promise<void> {
  const bytes = binaryColumnType(db);
  await db.schema
    .createTable('message_structures')
    .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('envelope', bytes, (c) => c.notNull())
    .addColumn('body_structure', bytes, (c) => c.notNull())
    .addColumn('body', bytes, (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('message_structures').execute();
}
