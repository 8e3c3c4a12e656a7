/**
 * Organising stored mail: read flags, folders, labels and deletes. Each operation runs in the caller's transaction
 * and keeps the thread's and folders' counters true, raising the modseq of every folder whose messages it changes
 * (the rule pages' versions stand on, see `bumpFolder`). Lock order everywhere: the message rows changed, then
 * threads (in id order), then folder counters in folder-name order.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { MailTables } from './mail.table.js';
import type { MessageTable, ThreadTable } from './message.table.js';
import { bumpFolder, insertLabels, mailDb, stampModseq, threadMessageRows, type MailDb, type MessageRef } from './message.store.js';

/** The union of the labels of a thread's messages. */
export async function threadLabels(db: MailDb, workspaceId: string, threadId: string): Promise<string[]> {
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

/** The thread's labels from its messages' (after a change of them, or a message left it). */
async function refreshThreadLabels(db: MailDb, clock: Clock, workspaceId: string, threadId: string): Promise<string[]> {
  const labels = await threadLabels(db, workspaceId, threadId);
  await db.updateTable('threads').set({ labels: JSON.stringify(labels), updated_at: clock.now() }).where('workspace_id', '=', workspaceId).where('id', '=', threadId).execute();
  return labels;
}

/** After messages left their thread: the thread's counts, latest message and labels from the messages left. */
async function recountThread(db: MailDb, clock: Clock, workspaceId: string, thread: ThreadTable): Promise<void> {
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
  await refreshThreadLabels(db, clock, workspaceId, thread.id);
}

/** What a delete returns of each message it removed: what its thread, its folder's counters (and a usage count) need. */
export type RemovedMessage = Pick<MessageTable, 'id' | 'thread_id' | 'mailbox_id' | 'folder' | 'read' | 'size' | 'uid'>;

/** A further condition on the messages a delete may remove (checked on each row as the delete reaches it). */
export type RemoveGuard = (eb: ExpressionBuilder<MailTables, 'messages'>) => Expression<SqlBool>;

/**
 * Each thread that lost messages, locked in one statement in id order (PostgreSQL), then deleted when none is left
 * (one statement for all of them) or counted again.
 */
async function settleThreads(db: MailDb, deps: { clock: Clock; dialect: DialectInfo }, workspaceId: string, removed: readonly RemovedMessage[]): Promise<void> {
  const perThread = new Map<string, number>();
  for (const row of removed) perThread.set(row.thread_id, (perThread.get(row.thread_id) ?? 0) + 1);
  if (perThread.size === 0) return;
  let query = db.selectFrom('threads').selectAll().where('workspace_id', '=', workspaceId).where('id', 'in', [...perThread.keys()]).orderBy('id');
  if (deps.dialect.supportsRowLocks) query = query.forUpdate();
  const threads = await query.execute();
  const emptied = new Set(threads.filter((t) => t.message_count <= perThread.get(t.id)!).map((t) => t.id));
  if (emptied.size > 0) await db.deleteFrom('threads').where('workspace_id', '=', workspaceId).where('id', 'in', [...emptied]).execute();
  for (const thread of threads) if (!emptied.has(thread.id)) await recountThread(db, deps.clock, workspaceId, thread);
}

/** Each folder that lost messages: its counters (bytes too, which the `stored_bytes` quota sums) lowered and its modseq raised, in folder-name order. */
async function settleFolders(db: MailDb, workspaceId: string, removed: readonly RemovedMessage[]): Promise<void> {
  const perFolder = new Map<string, { mailboxId: string; folder: string; total: number; unread: number; bytes: number }>();
  for (const row of removed) {
    const key = `${row.mailbox_id}\u0000${row.folder}`;
    const counts = perFolder.get(key) ?? { mailboxId: row.mailbox_id, folder: row.folder, total: 0, unread: 0, bytes: 0 };
    counts.total -= 1;
    counts.bytes -= row.size;
    if (row.read !== 1) counts.unread -= 1;
    perFolder.set(key, counts);
  }
  for (const key of [...perFolder.keys()].sort()) {
    const c = perFolder.get(key)!;
    await bumpFolder(db, workspaceId, c.mailboxId, c.folder, c.total, c.unread, c.bytes);
  }
}

/**
 * THE delete path of messages: a user's `DELETE /messages/{id}` and the retention sweep both come here, in the
 * caller's transaction. One DELETE removes the messages (their contents, attachments, labels and search-index rows go
 * with them: foreign keys, and on SQLite the index key's trigger) and returns each as it was when removed, so the
 * counters follow the rows really removed, not an earlier read. Then their threads, then their folders' counters and
 * modseq (lock order: message rows, threads, counters), stored bytes included.
 */
export async function removeMessages(db: MailDb, deps: { clock: Clock; dialect: DialectInfo }, workspaceId: string, ids: readonly string[], guard?: RemoveGuard): Promise<RemovedMessage[]> {
  if (ids.length === 0) return [];
  let query = db.deleteFrom('messages').where('messages.workspace_id', '=', workspaceId).where('messages.id', 'in', ids);
  if (guard) query = query.where(guard);
  const removed = await query.returning(['id', 'thread_id', 'mailbox_id', 'folder', 'read', 'size', 'uid']).execute();
  await settleThreads(db, deps, workspaceId, removed);
  await settleFolders(db, workspaceId, removed);
  await logExpunged(db, workspaceId, removed, deps.clock.now());
  return removed;
}

/** Most rows one INSERT of the expunge log writes (each binds a handful of values). */
const EXPUNGE_ROWS_PER_STATEMENT = 1_000;

/**
 * Record UIDs that left their folders (deleted, moved out, expired) with each folder's modseq after the change, for
 * mail clients' QRESYNC (VANISHED). Runs after the folders' `bumpFolder`, whose row locks keep that modseq ours.
 */
export async function logExpunged(db: MailDb, workspaceId: string, gone: ReadonlyArray<Pick<MessageTable, 'mailbox_id' | 'folder' | 'uid'>>, now: number): Promise<void> {
  for (let start = 0; start < gone.length; start += EXPUNGE_ROWS_PER_STATEMENT) {
    const chunk = gone.slice(start, start + EXPUNGE_ROWS_PER_STATEMENT);
    await db
      .insertInto('mail_expunged')
      .values((eb) =>
        chunk.map((row) => ({
          workspace_id: workspaceId,
          mailbox_id: row.mailbox_id,
          folder: row.folder,
          uid: row.uid,
          modseq: eb.selectFrom('folder_counts').select('folder_counts.modseq').where('folder_counts.mailbox_id', '=', row.mailbox_id).where('folder_counts.folder', '=', row.folder).$asScalar().$castTo<number>(),
          expunged_at: now,
        })),
      )
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/** The flags a change may set: IMAP's \Flagged, \Answered and \Deleted (what is not given stays). */
export interface FlagChange {
  flagged?: boolean | undefined;
  answered?: boolean | undefined;
  deleted?: boolean | undefined;
}
type FlagColumns = Pick<MessageTable, 'flagged' | 'answered' | 'deleted'>;

/** The columns a flag change sets. */
export function flagColumns(flags: FlagChange): Partial<FlagColumns> {
  const set: Partial<FlagColumns> = {};
  if (flags.flagged !== undefined) set.flagged = flags.flagged ? 1 : 0;
  if (flags.answered !== undefined) set.answered = flags.answered ? 1 : 0;
  if (flags.deleted !== undefined) set.deleted = flags.deleted ? 1 : 0;
  return set;
}

/** Raise the modseq of each folder holding `messages` (counts stay), in folder-name order. */
export async function bumpFoldersOf(db: MailDb, workspaceId: string, messages: ReadonlyArray<Pick<MessageRef, 'mailbox_id' | 'folder'>>): Promise<void> {
  const folders = new Map(messages.map((r) => [`${r.mailbox_id}\u0000${r.folder}`, r]));
  for (const key of [...folders.keys()].sort()) {
    const row = folders.get(key)!;
    await bumpFolder(db, workspaceId, row.mailbox_id, row.folder, 0, 0, 0);
  }
}

/** Most messages one move statement renumbers (each is a branch of the statement's CASE). */
const MOVE_CHUNK = 500;

/** A message a move moved: its new UID, and the folder it left and its direction (what a move teaches rspamd). */
export interface MovedMessage {
  id: string;
  uid: number;
  from: string;
  direction: 'inbound' | 'outbound';
}

/**
 * Move messages of one mailbox into `folder` (see the store's `moveMessages`). Lock order: the message rows (locked
 * by the first read on PostgreSQL), then the folder counters in name order; then one UPDATE gives each moved message
 * its folder, its new UID (`uidnext` before the bump + its rank) and the target's modseq, and the old UIDs go to
 * the expunge log with their old folders' new modseq.
 */
export async function moveMessages(db: MailDb, deps: { clock: Clock; dialect: DialectInfo }, workspaceId: string, mailboxId: string, ids: readonly string[], folder: string, renumber = false): Promise<MovedMessage[]> {
  const moved: MovedMessage[] = [];
  for (let start = 0; start < ids.length; start += MOVE_CHUNK) moved.push(...(await moveChunk(db, deps, workspaceId, mailboxId, ids.slice(start, start + MOVE_CHUNK), folder, renumber)));
  return moved;
}

async function moveChunk(db: MailDb, deps: { clock: Clock; dialect: DialectInfo }, workspaceId: string, mailboxId: string, ids: readonly string[], folder: string, renumber: boolean): Promise<MovedMessage[]> {
  let query = db
    .selectFrom('messages')
    .select(['id', 'mailbox_id', 'folder', 'uid', 'read', 'size', 'direction'])
    .where('workspace_id', '=', workspaceId)
    .where('mailbox_id', '=', mailboxId)
    .where('id', 'in', ids)
    .orderBy('folder')
    .orderBy('uid');
  // A message already in the target stays as it is, unless renumbered (IMAP MOVE into its own folder).
  if (!renumber) query = query.where('folder', '<>', folder);
  if (deps.dialect.supportsRowLocks) query = query.forUpdate();
  const rows = await query.execute();
  if (rows.length === 0) return [];
  const changes = new Map<string, { total: number; unread: number; bytes: number; uids: number }>();
  const add = (name: string, sign: number, row: (typeof rows)[number]) => {
    const c = changes.get(name) ?? { total: 0, unread: 0, bytes: 0, uids: 0 };
    c.total += sign;
    c.unread += row.read === 1 ? 0 : sign;
    c.bytes += sign * row.size;
    if (sign > 0) c.uids += 1;
    changes.set(name, c);
  };
  for (const row of rows) {
    add(row.folder, -1, row);
    add(folder, 1, row);
  }
  for (const name of [...changes.keys()].sort()) {
    const c = changes.get(name)!;
    await bumpFolder(db, workspaceId, mailboxId, name, c.total, c.unread, c.bytes, c.uids);
  }
  const target = (column: 'uidnext' | 'modseq') =>
    db.selectFrom('folder_counts').select(`folder_counts.${column}`).where('folder_counts.mailbox_id', '=', mailboxId).where('folder_counts.folder', '=', folder).$asScalar();
  const n = rows.length;
  // The rank of each message among those moved: its new UID is the target's uidnext before the bump plus the rank.
  await db
    .updateTable('messages')
    .set((eb) => {
      let ranked = eb.case('id').when(rows[0]!.id).then(0);
      for (let i = 1; i < n; i++) ranked = ranked.when(rows[i]!.id).then(i);
      return {
        folder,
        uid: sql<number>`${target('uidnext')} - ${n} + ${ranked.end()}`,
        modseq: target('modseq').$castTo<number>(),
        updated_at: deps.clock.now(),
      };
    })
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', rows.map((r) => r.id))
    .execute();
  await logExpunged(db, workspaceId, rows, deps.clock.now());
  const after = await db.selectFrom('messages').select(['id', 'uid']).where('workspace_id', '=', workspaceId).where('id', 'in', rows.map((r) => r.id)).orderBy('uid').execute();
  const before = new Map(rows.map((r) => [r.id, r]));
  return after.map((r) => {
    const was = before.get(r.id)!;
    return { id: r.id, uid: Number(r.uid), from: was.folder, direction: was.direction };
  });
}

/** Organising operations (see the top of this file). */
export function createOrganizeStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
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
      await stampModseq(db, workspaceId, [row.id]);
      return true;
    },

    /** Move a message to another folder (nothing when it is there, or was moved by someone else meanwhile); it gets a new UID there. */
    async moveMessage(work: Work, workspaceId: string, row: MessageRef, folder: string): Promise<void> {
      if (row.folder === folder) return;
      await moveMessages(mailDb(work), { clock, dialect }, workspaceId, row.mailbox_id, [row.id], folder);
    },

    /**
     * Move messages of one mailbox to `folder`: each gets the next UID there, in the order of its old folder and UID
     * (IMAP MOVE), and leaves its old UID in the expunge log. Returns the moved messages' new UIDs, old UID order.
     * `renumber`: messages already in `folder` are moved too (a new UID there, the old one expunged), as IMAP MOVE
     * into the selected folder does; otherwise they are left alone.
     */
    moveMessages: (work: Work, workspaceId: string, mailboxId: string, ids: readonly string[], folder: string, renumber = false) => moveMessages(mailDb(work), { clock, dialect }, workspaceId, mailboxId, ids, folder, renumber),

    /** Delete a message; its thread goes with its last message, else is counted again (see `removeMessages`). */
    async deleteMessage(work: Work, workspaceId: string, row: MessageRef): Promise<void> {
      await removeMessages(mailDb(work), { clock, dialect }, workspaceId, [row.id]);
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
    async labelsChanged(work: Work, workspaceId: string, threadId: string, messages: ReadonlyArray<Pick<MessageRef, 'id' | 'mailbox_id' | 'folder'>>): Promise<string[]> {
      const db = mailDb(work);
      const labels = await refreshThreadLabels(db, clock, workspaceId, threadId);
      await bumpFoldersOf(db, workspaceId, messages);
      await stampModseq(db, workspaceId, messages.map((m) => m.id));
      return labels;
    },

    /**
     * Set a message's flags (those given; `deleted` is IMAP's \Deleted) and raise its folder's modseq, which the
     * message takes; false when no such message or nothing changed.
     */
    async setFlags(work: Work, workspaceId: string, row: Pick<MessageRef, 'id' | 'mailbox_id' | 'folder'>, flags: FlagChange): Promise<boolean> {
      const db = mailDb(work);
      const set = flagColumns(flags);
      if (Object.keys(set).length === 0) return false;
      const result = await db
        .updateTable('messages')
        .set({ ...set, updated_at: clock.now() })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', row.id)
        .where('folder', '=', row.folder)
        .where((eb) => eb.or(Object.entries(set).map(([column, value]) => eb(column as keyof FlagColumns, '<>', value))))
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await bumpFolder(db, workspaceId, row.mailbox_id, row.folder, 0, 0, 0);
      await stampModseq(db, workspaceId, [row.id]);
      return true;
    },
  };
}
