/**
 * Threads as one folder shows them (a mail client's conversation list): the threads having a message in the folder,
 * ordered by their newest message there, each with what the folder holds of it (count, unread, senders, snippet).
 * Read from the messages themselves, so a move between folders shows at once; every statement filters by workspace.
 */
import { sql } from 'kysely';
import type { Work } from '../../db/tables.js';
import { mailDb, type MailDb, type ThreadRow } from './message.store.js';

/** A thread's share of one folder. */
export interface FolderThreadRow {
  thread: ThreadRow;
  folder: string;
  messageCount: number;
  unreadCount: number;
  /** The `from_json` of its messages in the folder, one per sender, in order of first appearance. */
  senders: string[];
  /** Its newest message in the folder. */
  messageId: string;
  lastMessageAt: number;
  snippet: string;
}

/** Senders named per thread row, at most. */
const MAX_SENDERS = 10;

type Scope = { workspaceId: string; mailboxId?: string | undefined; folder: string };

/**
 * The newest message of each thread in the folder, newest first: the folder's index is walked downwards and a
 * message is kept when no later one of its thread is in the folder (an index probe on thread and folder), so a page
 * reads about as many rows as it shows, however large the folder.
 */
function newestPerThread(db: MailDb, scope: Scope, limit: number, offset: number) {
  let query = db
    .selectFrom('messages as m')
    .select(['m.id', 'm.thread_id', 'm.created_at', 'm.snippet'])
    .where('m.workspace_id', '=', scope.workspaceId)
    .where('m.folder', '=', scope.folder);
  if (scope.mailboxId !== undefined) query = query.where('m.mailbox_id', '=', scope.mailboxId);
  return query
    .where((outer) =>
      outer.not(
        outer.exists(
          outer
            .selectFrom('messages as n')
            .select(sql<number>`1`.as('one'))
            .whereRef('n.thread_id', '=', 'm.thread_id')
            .whereRef('n.folder', '=', 'm.folder')
            .whereRef('n.workspace_id', '=', 'm.workspace_id')
            .where((eb) => eb.or([eb('n.created_at', '>', eb.ref('m.created_at')), eb.and([eb('n.created_at', '=', eb.ref('m.created_at')), eb('n.id', '>', eb.ref('m.id'))])])),
        ),
      ),
    )
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

/**
 * The folder's newest messages the count reads at most: it counts the threads among them, so it stays as cheap on a
 * folder of millions; beyond, the total is a lower bound and says so (`capped`).
 */
export const THREAD_COUNT_WINDOW = 10_000;

/** How many threads have a message in the folder (among its newest THREAD_COUNT_WINDOW messages). */
async function countThreads(db: MailDb, scope: Scope): Promise<{ total: number; capped: boolean }> {
  let window = db.selectFrom('messages').select(['thread_id']).where('workspace_id', '=', scope.workspaceId).where('folder', '=', scope.folder);
  if (scope.mailboxId !== undefined) window = window.where('mailbox_id', '=', scope.mailboxId);
  const row = await db
    .selectFrom(window.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(THREAD_COUNT_WINDOW + 1).as('w'))
    .select([sql<number | string>`count(distinct w.thread_id)`.as('n'), sql<number | string>`count(*)`.as('rows')])
    .executeTakeFirstOrThrow();
  return { total: Number(row.n), capped: Number(row.rows) > THREAD_COUNT_WINDOW };
}

/** Per thread of the page and sender: the folder's messages, unread ones and the sender's first one. */
function sendersOf(db: MailDb, scope: Scope, threadIds: string[]) {
  return db
    .selectFrom('messages')
    .select(['thread_id', 'from_json'])
    .select((eb) => [
      eb.fn.countAll<number | string>().as('n'),
      sql<number | string>`sum(case when ${eb.ref('read')} = 0 then 1 else 0 end)`.as('unread'),
      eb.fn.min('created_at').as('first_at'),
    ])
    .where('workspace_id', '=', scope.workspaceId)
    .where('folder', '=', scope.folder)
    .where('thread_id', 'in', threadIds)
    .groupBy(['thread_id', 'from_json'])
    .orderBy('first_at', 'asc')
    .execute();
}

function threadsByIds(db: MailDb, workspaceId: string, threadIds: string[]): Promise<ThreadRow[]> {
  return db
    .selectFrom('threads')
    .innerJoin('mailboxes', 'mailboxes.id', 'threads.mailbox_id')
    .selectAll('threads')
    .select('mailboxes.address as mailbox_address')
    .where('threads.workspace_id', '=', workspaceId)
    .where('threads.id', 'in', threadIds)
    .execute();
}

export async function folderThreadRows(db: MailDb, scope: Scope, limit: number, offset: number): Promise<{ rows: FolderThreadRow[]; total: number; capped: boolean }> {
  const [newest, { total, capped }] = await Promise.all([newestPerThread(db, scope, limit, offset), countThreads(db, scope)]);
  if (newest.length === 0) return { rows: [], total, capped };
  const ids = newest.map((r) => r.thread_id);
  const [threads, senders] = await Promise.all([threadsByIds(db, scope.workspaceId, ids), sendersOf(db, scope, ids)]);
  const byId = new Map(threads.map((t) => [t.id, t]));
  const rows: FolderThreadRow[] = [];
  for (const n of newest) {
    const thread = byId.get(n.thread_id);
    if (!thread) continue;
    const mine = senders.filter((s) => s.thread_id === n.thread_id);
    rows.push({
      thread,
      folder: scope.folder,
      messageCount: mine.reduce((sum, s) => sum + Number(s.n), 0),
      unreadCount: mine.reduce((sum, s) => sum + Number(s.unread), 0),
      senders: mine.slice(0, MAX_SENDERS).map((s) => s.from_json),
      messageId: n.id,
      lastMessageAt: Number(n.created_at),
      snippet: n.snippet,
    });
  }
  return { rows, total, capped };
}

export function createFolderThreadStore() {
  return {
    folderThreadPage: (work: Work, scope: Scope, limit: number, offset: number) => folderThreadRows(mailDb(work), scope, limit, offset),
  };
}
