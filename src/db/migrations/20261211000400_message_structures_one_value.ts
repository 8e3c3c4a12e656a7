import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * `message_structures` keeps a message's ENVELOPE, BODYSTRUCTURE and BODY in one bytes value (`structure`, the three
 * with their lengths in front: lib/imap-message/structure.ts) instead of three columns: a FETCH reads one value a
 * message, and each bytes value the drivers hand back is an allocation of its own. The rows are a cache computed
 * again on first use, so the table is made anew rather than converted.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.dropTable('message_structures').execute();
  await db.schema
    .createTable('message_structures')
    .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('structure', binaryColumnType(db), (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  const bytes = binaryColumnType(db);
  await db.schema.dropTable('message_structures').execute();
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
