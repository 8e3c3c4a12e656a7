import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Files attached to a draft (uploaded, or given as base64 with the draft), kept until the draft is
 * sent, when they become MIME parts of the message and rows of `attachments`. They go with their draft.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('draft_attachments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('draft_id', 'text', (c) => c.notNull().references('drafts.id').onDelete('cascade'))
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('content_id', 'text')
    .addColumn('content', binaryColumnType(db), (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('draft_attachments_draft_idx').on('draft_attachments').columns(['workspace_id', 'draft_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('draft_attachments').execute();
}
