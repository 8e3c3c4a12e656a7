/**
 * Organising stored mail: read flags, folders, labels and deletes. Each operation runs in the caller's transaction
 * and keeps the thread's and folders' counters true, raising the modseq of every folder whose messages it changes
 * (the rule pages' versions stand on, see `bumpFolder`). Lock order everywhere: thread, then folder counters in
 * folder-name order.
 */
import { sql } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { ThreadTable } from './message.table.js';
import { bumpFolder, insertLabels, lockThread, mailDb, threadMessageRows, type MailDb, type MessageRef } from './message.store.js';


/** The union of the labels of a thread's messages. */
async function threadLabels(db: MailDb, workspaceId: string, threadId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('message_labels')
    .innerJoin('messages', 'messages.id', 'message_labels.message_id')
    .select('message_labels.label')
    .distinct()
    .where('message_labels.workspace_id', '=', workspaceId)
    .where('messages.thread_id', '=', threadId)
    .orderBy('message_labels.label')
    .execute();
  return rows.map((r) => r.label);
}

/** Organising operations (see the top of this file). */
export function createOrganizeStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  async function refreshThreadLabels(db: MailDb, workspaceId: string, threadId: string): Promise<string[]> {
    const labels = await threadLabels(db, workspaceId, threadId);
    await db.updateTable('threads').set({ labels: JSON.stringify(labels), updated_at: clock.now() }).where('workspace_id', '=', workspaceId).where('id', '=', threadId).execute();
    return labels;
  }

  /** After a message left its thread: the thread's counts, latest message and labels from the messages left. */
  async function recountThread(db: MailDb, workspaceId: string, thread: ThreadTable): Promise<void> {
    const remaining = await threadMessageRows(db, workspaceId, thread.id);
    const last = remaining[remaining.length - 1];
    await db
      .updateTable('threads')
      .set({
        message_count: remaining.length,
        unread_count: remaining.filter((m) => m.read === 0).length,
        last_message_at: last ? last.created_at : thread.last_message_at,
        snippet: last ? last.snippet : thread.snippet,
        updated_at: clock.now(),
      })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', thread.id)
      .execute();
    await refreshThreadLabels(db, workspaceId, thread.id);
  }

  return {
    /** Flip a message's read flag and keep folder and thread counters true; false when nothing changed. */
    async markRead(work: Work, workspaceId: string, row: MessageRef, read: boolean): Promise<boolean> {
      const db = mailDb(work);
      const result = await db
        .updateTable('messages')
        .set({ read: read ? 1 : 0, updated_at: clock.now() })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', row.id)
        .where('read', '=', read ? 0 : 1)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      const delta = read ? -1 : 1;
      await db
        .updateTable('threads')
        .set({ unread_count: sql<number>`${sql.ref('unread_count')} + ${delta}` })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', row.thread_id)
        .execute();
      await bumpFolder(db, workspaceId, row.mailbox_id, row.folder, 0, delta, 0);
      return true;
    },

    /** Move a message to another folder (nothing when it is there, or was moved by someone else meanwhile). */
    async moveMessage(work: Work, workspaceId: string, row: MessageRef, folder: string): Promise<void> {
      if (row.folder === folder) return;
      const db = mailDb(work);
      const result = await db
        .updateTable('messages')
        .set({ folder, updated_at: clock.now() })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', row.id)
        .where('folder', '=', row.folder)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return;
      const unread = row.read === 1 ? 0 : 1;
      const changes: Array<[string, number]> = [
        [row.folder, -1],
        [folder, 1],
      ];
      changes.sort(([a], [b]) => a.localeCompare(b));
      for (const [name, sign] of changes) await bumpFolder(db, workspaceId, row.mailbox_id, name, sign, sign * unread, sign * row.size);
    },

    /** Delete a message; its thread goes with its last message, else is counted again. */
    async deleteMessage(work: Work, workspaceId: string, row: MessageRef): Promise<void> {
      const db = mailDb(work);
      const thread = await lockThread(db, workspaceId, row.thread_id, dialect.supportsRowLocks);
      await db.deleteFrom('messages').where('workspace_id', '=', workspaceId).where('id', '=', row.id).execute();
      const unread = row.read === 1 ? 0 : 1;
      await bumpFolder(db, workspaceId, row.mailbox_id, row.folder, -1, -unread, -row.size);
      if (!thread) return;
      if (thread.message_count <= 1) {
        await db.deleteFrom('threads').where('workspace_id', '=', workspaceId).where('id', '=', thread.id).execute();
        return;
      }
      await recountThread(db, workspaceId, thread);
    },

    /**
     * Add and remove a message's labels (an added label that is also removed is not added); returns its labels now.
     * The caller checks their number, and follows with `labelsChanged` once per thread.
     */
    async changeLabels(work: Work, workspaceId: string, messageId: string, add: readonly string[], remove: readonly string[]): Promise<string[]> {
      const db = mailDb(work);
      if (remove.length > 0) {
        await db.deleteFrom('message_labels').where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).where('label', 'in', remove).execute();
      }
      await insertLabels(db, workspaceId, messageId, add.filter((l) => !remove.includes(l)));
      const rows = await db.selectFrom('message_labels').select('label').where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).orderBy('label').execute();
      const labels = rows.map((r) => r.label);
      await db.updateTable('messages').set({ labels: JSON.stringify(labels), updated_at: clock.now() }).where('workspace_id', '=', workspaceId).where('id', '=', messageId).execute();
      return labels;
    },

    /**
     * After `changeLabels` on `messages` of one thread: the thread's labels from its messages', and the modseq of
     * the folders holding them raised (counts stay), in folder-name order. Returns the thread's labels.
     */
    async labelsChanged(work: Work, workspaceId: string, threadId: string, messages: ReadonlyArray<Pick<MessageRef, 'mailbox_id' | 'folder'>>): Promise<string[]> {
      const db = mailDb(work);
      const labels = await refreshThreadLabels(db, workspaceId, threadId);
      const folders = new Map(messages.map((r) => [`${r.mailbox_id}\u0000${r.folder}`, r]));
      for (const key of [...folders.keys()].sort()) {
        const row = folders.get(key)!;
        await bumpFolder(db, workspaceId, row.mailbox_id, row.folder, 0, 0, 0);
      }
      return labels;
    },
  };
}
