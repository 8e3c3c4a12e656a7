/**
 * Moving a mailbox's mail out (mbox export) and in (import): reads in pages, in the order of the folder index, and
 * the duplicate check an import makes before it stores a message through `storeCopy`. Every statement filters by
 * workspace; a mailbox is looked up within its workspace when the caller names one.
 */
import type { JoinBuilder } from 'kysely';
import type { Work } from '../../db/tables.js';
import type { MailTables } from './mail.table.js';
import type { MailboxTable } from './mailbox.table.js';
import { mailDb } from './message.store.js';

/** A message as an export writes it, without its bytes (fetched apart, a bounded number at a time). */
export interface TransferRow {
  id: string;
  created_at: number;
  read: number;
  direction: 'inbound' | 'outbound';
  size: number;
  envelope_json: string;
}

/** Where an export page starts: after this message of the folder's (created_at, id) order. */
export interface TransferCursor {
  createdAt: number;
  id: string;
}

/** What an import knows of a message before storing it, to find the same one stored already. */
export interface ImportProbe {
  workspaceId: string;
  mailboxId: string;
  /** The Message-ID (as stored: `internet_message_id`), or null for a message without one. */
  messageId: string | null;
  /** The time it is stored under (`created_at`): how a message without a Message-ID is found again. */
  receivedAt: number;
  raw: Buffer;
}

export function createTransferStore() {
  return {
    /** The mailbox at an address: within the workspace when one is given, else wherever it is (the operator's view). */
    transferMailbox: (work: Work, address: string, workspaceId: string | null): Promise<Pick<MailboxTable, 'id' | 'workspace_id' | 'address'> | undefined> => {
      let query = mailDb(work).selectFrom('mailboxes').select(['id', 'workspace_id', 'address']).where('address', '=', address);
      if (workspaceId !== null) query = query.where('workspace_id', '=', workspaceId);
      return query.executeTakeFirst();
    },

    /** The folders of a mailbox that hold messages, in name order. */
    transferFolders: async (work: Work, workspaceId: string, mailboxId: string): Promise<string[]> =>
      (
        await mailDb(work)
          .selectFrom('folder_counts')
          .select('folder')
          .where('workspace_id', '=', workspaceId)
          .where('mailbox_id', '=', mailboxId)
          .where('total', '>', 0)
          .orderBy('folder')
          .execute()
      ).map((r) => r.folder),

    /** A page of a folder's messages, oldest first (the folder index's order), after the cursor. */
    transferPage: (work: Work, scope: { workspaceId: string; mailboxId: string; folder: string }, after: TransferCursor | null, limit: number): Promise<TransferRow[]> => {
      let query = mailDb(work)
        .selectFrom('messages')
        .select(['id', 'created_at', 'read', 'direction', 'size', 'envelope_json'])
        .where('workspace_id', '=', scope.workspaceId)
        .where('mailbox_id', '=', scope.mailboxId)
        .where('folder', '=', scope.folder);
      if (after) {
        const { createdAt, id } = after;
        query = query.where((eb) => eb.or([eb('created_at', '>', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '>', id)])]));
      }
      return query.orderBy('created_at').orderBy('id').limit(limit).execute();
    },

    /** The raw sources of some messages of the workspace, by message id. */
    transferRaws: async (work: Work, workspaceId: string, ids: readonly string[]): Promise<Map<string, Buffer>> => {
      if (ids.length === 0) return new Map();
      const rows = await mailDb(work).selectFrom('message_contents').select(['message_id', 'raw']).where('workspace_id', '=', workspaceId).where('message_id', 'in', ids).execute();
      return new Map(rows.map((r) => [r.message_id, r.raw]));
    },

    /**
     * Whether the mailbox holds this message already: one with the same Message-ID (found through the thread its
     * key names, by the index of thread references) or, without one, stored at the same time, whose bytes are
     * the same. Compared byte for byte, which a content hash would only stand in for.
     */
    importDuplicate: async (work: Work, probe: ImportProbe): Promise<boolean> => {
      const db = mailDb(work);
      const contents = (join: JoinBuilder<MailTables, 'messages' | 'message_contents'>) =>
        join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id');
      const sameBytes = (rows: Array<{ raw: Buffer }>) => rows.some((r) => Buffer.from(r.raw).equals(probe.raw));
      if (probe.messageId === null) {
        return sameBytes(
          await db
            .selectFrom('messages')
            .innerJoin('message_contents', contents)
            .select('message_contents.raw')
            .where('messages.workspace_id', '=', probe.workspaceId)
            .where('messages.created_at', '=', probe.receivedAt)
            .where('messages.mailbox_id', '=', probe.mailboxId)
            .where('messages.internet_message_id', 'is', null)
            .where('messages.size', '=', probe.raw.length)
            .execute(),
        );
      }
      // From the reference first: SQLite then walks the thread's messages, not the workspace's.
      return sameBytes(
        await db
          .selectFrom('thread_refs')
          .innerJoin('messages', 'messages.thread_id', 'thread_refs.thread_id')
          .innerJoin('message_contents', contents)
          .select('message_contents.raw')
          .where('thread_refs.workspace_id', '=', probe.workspaceId)
          .where('thread_refs.mailbox_id', '=', probe.mailboxId)
          .where('thread_refs.message_key', '=', probe.messageId)
          .where('messages.workspace_id', '=', probe.workspaceId)
          .where('messages.mailbox_id', '=', probe.mailboxId)
          .where('messages.internet_message_id', '=', probe.messageId)
          .where('messages.size', '=', probe.raw.length)
          .execute(),
      );
    },
  };
}
