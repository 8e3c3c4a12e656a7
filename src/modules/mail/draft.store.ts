import type { Kysely } from 'kysely';
import { tablesOf, type Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { removeDrafts } from './draft-folder.store.js';
import type { DraftAttachmentTable, DraftSourceColumns, DraftTable } from './draft.table.js';
import type { MailTables } from './mail.table.js';

/** A draft attachment without its bytes: what the draft view lists. */
export type DraftAttachmentMeta = Omit<DraftAttachmentTable, 'content' | 'workspace_id'>;
const META = ['id', 'draft_id', 'filename', 'content_type', 'size', 'content_id', 'created_at'] as const;

/** A new draft's columns: it starts without a source, UID or flags (`setDraftSource` gives them). */
export type NewDraftRow = Omit<DraftTable, DraftSourceColumns>;

/** A draft row (without its source) with its mailbox's address (the draft's `mailbox`, its From). */
export type DraftRow = Omit<DraftTable, 'raw'> & { mailbox_address: string };

const ROW_COLUMNS = [
  'drafts.id', 'drafts.workspace_id', 'drafts.mailbox_id', 'drafts.to_json', 'drafts.cc_json', 'drafts.bcc_json', 'drafts.subject', 'drafts.body', 'drafts.html',
  'drafts.in_reply_to', 'drafts.created_at', 'drafts.updated_at', 'drafts.size', 'drafts.uid', 'drafts.modseq', 'drafts.read', 'drafts.flagged', 'drafts.answered',
  'drafts.deleted', 'drafts.labels',
] as const;

function withAddress(db: Kysely<MailTables>, workspaceId: string) {
  return db
    .selectFrom('drafts')
    .innerJoin('mailboxes', 'mailboxes.id', 'drafts.mailbox_id')
    .select(ROW_COLUMNS)
    .select('mailboxes.address as mailbox_address')
    .where('drafts.workspace_id', '=', workspaceId);
}

/** Drafts (messages being written) and their files; every operation filters by workspace. */
export interface DraftStore {
  saveDraft(work: Work, row: NewDraftRow): Promise<void>;
  findDraft(work: Work, workspaceId: string, id: string): Promise<DraftRow | undefined>;
  /** Newest first, then id, so pages never overlap. */
  listDrafts(work: Work, workspaceId: string, mailboxId: string | undefined, limit: number, offset: number): Promise<DraftRow[]>;
  countDrafts(work: Work, workspaceId: string, mailboxId: string | undefined): Promise<number>;
  /** Number of drafts changed (0 when the draft is gone). */
  updateDraft(work: Work, workspaceId: string, id: string, values: Partial<Omit<DraftTable, 'id' | 'workspace_id' | 'created_at'>>): Promise<number>;
  /** Number of drafts removed (0 when the draft is gone), in the caller's transaction: it leaves IMAP's Drafts too. */
  deleteDraft(work: Work, workspaceId: string, id: string): Promise<number>;
  /** The address of a mailbox of the workspace, by id (a draft's From). */
  draftMailboxAddress(work: Work, workspaceId: string, mailboxId: string): Promise<string | undefined>;
  /**
   * Remove a draft and return what it held: the claim a send makes. Of two concurrent sends only one
   * gets the row back (PostgreSQL: the second waits on the row lock, then finds it gone). It leaves IMAP's Drafts.
   */
  takeDraft(work: Work, workspaceId: string, id: string): Promise<DraftTable | undefined>;
  addDraftAttachments(work: Work, rows: DraftAttachmentTable[]): Promise<void>;
  /** The attachments of these drafts, without their bytes, in upload order. */
  draftAttachmentsOf(work: Work, workspaceId: string, draftIds: readonly string[]): Promise<DraftAttachmentMeta[]>;
  /** One draft's attachments with their bytes (to send them). */
  draftAttachmentContents(work: Work, workspaceId: string, draftId: string): Promise<DraftAttachmentTable[]>;
  findDraftAttachment(work: Work, workspaceId: string, draftId: string, id: string): Promise<DraftAttachmentTable | undefined>;
  /** Number of attachments removed: one, or (without `id`) all of the draft's. */
  removeDraftAttachments(work: Work, workspaceId: string, draftId: string, id?: string): Promise<number>;
}

const mail = (work: Work) => tablesOf<MailTables>(work);

export function createDraftStore({ clock }: { clock: Clock }): DraftStore {
  return {
    async saveDraft(work, row) {
      await mail(work).insertInto('drafts').values({ ...row, raw: null, size: 0, uid: null, modseq: 0, read: 0, flagged: 0, answered: 0, deleted: 0, labels: '[]' }).execute();
    },
    findDraft: (work, workspaceId, id) => withAddress(mail(work), workspaceId).where('drafts.id', '=', id).executeTakeFirst(),
    listDrafts(work, workspaceId, mailboxId, limit, offset) {
      let query = withAddress(mail(work), workspaceId);
      if (mailboxId !== undefined) query = query.where('drafts.mailbox_id', '=', mailboxId);
      return query.orderBy('drafts.created_at', 'desc').orderBy('drafts.id', 'desc').limit(limit).offset(offset).execute();
    },
    async countDrafts(work, workspaceId, mailboxId) {
      let query = mail(work).selectFrom('drafts').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId);
      if (mailboxId !== undefined) query = query.where('mailbox_id', '=', mailboxId);
      return Number((await query.executeTakeFirstOrThrow()).n);
    },
    updateDraft: async (work, workspaceId, id, values) =>
      Number((await mail(work).updateTable('drafts').set(values).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows),
    deleteDraft: async (work, workspaceId, id) => (await removeDrafts(mail(work), clock, workspaceId, [id])).length,
    draftMailboxAddress: async (work, workspaceId, mailboxId) =>
      (await mail(work).selectFrom('mailboxes').select('address').where('workspace_id', '=', workspaceId).where('id', '=', mailboxId).executeTakeFirst())?.address,
    async takeDraft(work, workspaceId, id) {
      const row = await mail(work).selectFrom('drafts').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
      // The delete decides who has it: of two concurrent sends, only one removes the row.
      return row && (await removeDrafts(mail(work), clock, workspaceId, [id])).length === 1 ? row : undefined;
    },
    async addDraftAttachments(work, rows) {
      // One row per statement: a row may hold 25 MiB, and SQLite and PostgreSQL both take that better alone.
      for (const row of rows) await mail(work).insertInto('draft_attachments').values(row).execute();
    },
    draftAttachmentsOf: (work, workspaceId, draftIds) =>
      draftIds.length === 0
        ? Promise.resolve([])
        : mail(work).selectFrom('draft_attachments').select(META).where('workspace_id', '=', workspaceId).where('draft_id', 'in', draftIds).orderBy('id').execute(),
    draftAttachmentContents: (work, workspaceId, draftId) =>
      mail(work).selectFrom('draft_attachments').selectAll().where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId).orderBy('id').execute(),
    findDraftAttachment: (work, workspaceId, draftId, id) =>
      mail(work).selectFrom('draft_attachments').selectAll().where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId).where('id', '=', id).executeTakeFirst(),
    async removeDraftAttachments(work, workspaceId, draftId, id) {
      let query = mail(work).deleteFrom('draft_attachments').where('workspace_id', '=', workspaceId).where('draft_id', '=', draftId);
      if (id !== undefined) query = query.where('id', '=', id);
      return Number((await query.executeTakeFirst()).numDeletedRows);
    },
  };
}
