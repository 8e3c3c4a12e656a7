import type { Db } from '../../db/database.js';
import type { DraftAttachmentTable, DraftTable } from '../mail/draft.table.js';

/** A draft attachment without its bytes: what the draft view lists. */
export type DraftAttachmentMeta = Omit<DraftAttachmentTable, 'content' | 'workspace_id'>;
const META = ['id', 'draft_id', 'filename', 'content_type', 'size', 'content_id', 'created_at'] as const;

/** A draft row with its mailbox's address (the draft's `mailbox`, its From). */
export type DraftRow = DraftTable & { mailbox_address: string };

function withAddress(db: Db, workspaceId: string) {
  return db
    .selectFrom('drafts')
    .innerJoin('mailboxes', 'mailboxes.id', 'drafts.mailbox_id')
    .selectAll('drafts')
    .select('mailboxes.address as mailbox_address')
    .where('drafts.workspace_id', '=', workspaceId);
}

/** Draft queries; every one filters by workspace. */
export const draftRepository = {
  insert: (db: Db, row: DraftTable) => db.insertInto('drafts').values(row).execute(),
  find: (db: Db, workspaceId: string, id: string): Promise<DraftRow | undefined> => withAddress(db, workspaceId).where('drafts.id', '=', id).executeTakeFirst(),
  /** Newest first, then id, so pages never overlap. */
  list: (db: Db, workspaceId: string, mailboxId: string | undefined, limit: number, offset: number): Promise<DraftRow[]> => {
    let query = withAddress(db, workspaceId);
    if (mailboxId !== undefined) query = query.where('drafts.mailbox_id', '=', mailboxId);
    return query.orderBy('drafts.created_at', 'desc').orderBy('drafts.id', 'desc').limit(limit).offset(offset).execute();
  },
  count: async (db: Db, workspaceId: string, mailboxId: string | undefined): Promise<number> => {
    let query = db.selectFrom('drafts').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId);
    if (mailboxId !== undefined) query = query.where('mailbox_id', '=', mailboxId);
    return Number((await query.executeTakeFirstOrThrow()).n);
  },
  /** Number of rows changed (0 when the draft is gone). */
  update: async (db: Db, workspaceId: string, id: string, values: Partial<Omit<DraftTable, 'id' | 'workspace_id' | 'created_at'>>): Promise<number> =>
    Number((await db.updateTable('drafts').set(values).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows),
  /** Number of rows removed (0 when the draft is gone). */
  delete: async (db: Db, workspaceId: string, id: string): Promise<number> =>
    Number((await db.deleteFrom('drafts').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows),
  /** The address of a mailbox of the workspace, by id. */
  mailboxAddress: async (db: Db, workspaceId: string, mailboxId: string): Promise<string | undefined> =>
    (await db.selectFrom('mailboxes').select('address').where('workspace_id', '=', workspaceId).where('id', '=', mailboxId).executeTakeFirst())?.address,
  /**
   * Remove a draft and return what it held: the claim a send makes. Of two concurrent sends only one
   * gets the row back (PostgreSQL: the second waits on the row lock, then finds it gone).
   */
  take: (db: Db, workspaceId: string, id: string): Promise<DraftTable | undefined> =>
    db.deleteFrom('drafts').where('workspace_id', '=', workspaceId).where('id', '=', id).returningAll().executeTakeFirst(),

  insertAttachments: async (db: Db, rows: DraftAttachmentTable[]): Promise<void> => {
    // One row per statement: a row may hold 25 MiB, and SQLite and PostgreSQL both take that better alone.
    for (const row of rows) await db.insertInto('draft_attachments').values(row).execute();
  },
  /** The attachments of these drafts, without their bytes, in upload order. */
  attachmentsOf: (db: Db, workspaceId: string, draftIds: readonly string[]): Promise<DraftAttachmentMeta[]> =>
    draftIds.length === 0
      ? Promise.resolve([])
      : db.selectFrom('draft_attachments').select(META).where('workspace_id', '=', workspaceId).where('draft_id', 'in', draftIds).orderBy('id').execute(),
  /** One draft's attachments with their bytes (to send them). */
  attachmentContents: (db: Db, workspaceId: string, draftId: string): Promise<DraftAttachmentTable[]> =>
    db.selectFrom('draft_attachments').selectAll().where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId).orderBy('id').execute(),
  findAttachment: (db: Db, workspaceId: string, draftId: string, id: string): Promise<DraftAttachmentTable | undefined> =>
    db.selectFrom('draft_attachments').selectAll().where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId).where('id', '=', id).executeTakeFirst(),
  /** Number of rows removed: one attachment, or (without `id`) all of the draft's. */
  deleteAttachments: async (db: Db, workspaceId: string, draftId: string, id?: string): Promise<number> => {
    let query = db.deleteFrom('draft_attachments').where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId);
    if (id !== undefined) query = query.where('id', '=', id);
    return Number((await query.executeTakeFirst()).numDeletedRows);
  },
} as const;
