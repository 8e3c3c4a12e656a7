import type { Kysely } from 'kysely';
import { binaryColumnType } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const bytes = binaryColumnType(db);

  await db.schema
    .createTable('threads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('subject_key', 'text', (c) => c.notNull())
    .addColumn('participants', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull())
    .addColumn('unread_count', 'integer', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('snippet', 'text', (c) => c.notNull())
    .addColumn('last_message_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('threads_list_idx').on('threads').columns(['workspace_id', 'last_message_at', 'id']).execute();
  await db.schema.createIndex('threads_mailbox_idx').on('threads').columns(['mailbox_id', 'last_message_at', 'id']).execute();
  await db.schema.createIndex('threads_subject_idx').on('threads').columns(['mailbox_id', 'subject_key', 'last_message_at']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('thread_id', 'text', (c) => c.notNull().references('threads.id').onDelete('cascade'))
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('folder', 'text', (c) => c.notNull())
    .addColumn('read', 'integer', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('from_json', 'text', (c) => c.notNull())
    .addColumn('to_json', 'text', (c) => c.notNull())
    .addColumn('cc_json', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('snippet', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('date', 'bigint')
    .addColumn('internet_message_id', 'text')
    .addColumn('auth_json', 'text', (c) => c.notNull())
    .addColumn('attachments_json', 'text', (c) => c.notNull())
    .addColumn('envelope_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Inbox pages: one mailbox's folder, newest first.
  await db.schema.createIndex('messages_folder_idx').on('messages').columns(['mailbox_id', 'folder', 'created_at', 'id']).execute();
  await db.schema.createIndex('messages_workspace_idx').on('messages').columns(['workspace_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('messages_thread_idx').on('messages').columns(['thread_id', 'created_at']).execute();

  // The parts of a message only its single view and downloads read, kept out of list scans.
  await db.schema
    .createTable('message_contents')
    .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text')
    .addColumn('html_body', 'text')
    .addColumn('headers_json', 'text', (c) => c.notNull())
    .addColumn('raw', bytes, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('attachments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('inline', 'integer', (c) => c.notNull())
    .addColumn('content_id', 'text')
    .addColumn('content', bytes, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attachments_message_idx').on('attachments').column('message_id').execute();

  await db.schema
    .createTable('message_labels')
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_labels_pk', ['message_id', 'label'])
    .execute();
  await db.schema.createIndex('message_labels_label_idx').on('message_labels').columns(['workspace_id', 'label']).execute();

  // Message-IDs seen in a mailbox (its own and those it references) → the thread they belong to.
  await db.schema
    .createTable('thread_refs')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('message_key', 'text', (c) => c.notNull())
    .addColumn('thread_id', 'text', (c) => c.notNull().references('threads.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('thread_refs_pk', ['mailbox_id', 'message_key'])
    .execute();
  await db.schema.createIndex('thread_refs_thread_idx').on('thread_refs').column('thread_id').execute();

  // Messages and unread messages per mailbox folder, kept in the transaction of every change, so
  // that pages and mailbox views never count rows.
  await db.schema
    .createTable('folder_counts')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('mailbox_id', 'text', (c) => c.notNull().references('mailboxes.id').onDelete('cascade'))
    .addColumn('folder', 'text', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('unread', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('folder_counts_pk', ['mailbox_id', 'folder'])
    .execute();

  // The mailbox counters of the first schema are derived from folder_counts from now on.
  await db.schema.alterTable('mailboxes').dropColumn('message_count').execute();
  await db.schema.alterTable('mailboxes').dropColumn('unread_count').execute();

  await db.schema
    .createTable('list_entries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('list_type', 'text', (c) => c.notNull())
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('list_entries_unique', ['workspace_id', 'direction', 'list_type', 'entry'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('mailboxes').addColumn('message_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('mailboxes').addColumn('unread_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  for (const table of ['list_entries', 'folder_counts', 'thread_refs', 'message_labels', 'attachments', 'message_contents', 'messages', 'threads']) {
    await db.schema.dropTable(table).execute();
  }
}
