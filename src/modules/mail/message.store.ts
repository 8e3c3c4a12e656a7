/**
 * Messages as their views read them: single messages, pages (with their version, which the HTTP page cache keeps
 * answers under), threads, contents and attachments, and the folder counters every change of a message raises.
 * Every statement filters by workspace.
 */
import { sql, type ExpressionBuilder, type Kysely, type QueryCreator, type SelectQueryBuilder } from 'kysely';
import { insertRows, preparedQuery, preparedWrite, type Param } from '../../db/prepared.js';
import { deferrableWrite } from '../../db/write-coalescing.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { DeliveryStatus } from './outbound.table.js';
import { mailChanged } from './mail-changes.js';
import type { MailTables } from './mail.table.js';
import type { AttachmentTable, MessageContentTable, MessageTable, ThreadTable } from './message.table.js';
import type { SpamView } from '../messages/message.types.js';

/** The mail store's own view of a pool or transaction. */
export type MailDb = Kysely<MailTables>;
export const mailDb = (work: Work): MailDb => tablesOf<MailTables>(work);

/** What a message's list view reads of its own row (no envelope, no bookkeeping): see message.views.ts. */
const MESSAGE_COLUMNS = [
  'messages.id',
  'messages.thread_id',
  'messages.direction',
  'messages.folder',
  'messages.read',
  'messages.labels',
  'messages.from_json',
  'messages.to_json',
  'messages.cc_json',
  'messages.subject',
  'messages.snippet',
  'messages.size',
  'messages.date',
  'messages.internet_message_id',
  'messages.auth_json',
  'messages.attachments_json',
  'messages.created_at',
  'messages.flagged',
  'messages.answered',
] as const;
/** What a page of messages reads: the list view's columns, with the mailbox's address. */
export const PAGE_COLUMNS = [...MESSAGE_COLUMNS, 'mailboxes.address as mailbox_address'] as const;

/**
 * An outbound message's delivery state as its views show it (outbound messages add `status` and `events`): the
 * `outbound` row, joined as `delivery` (the delivery worker joins `outbound` under its own name). Inbound
 * messages have no such row, and their views no such fields.
 */
function withDelivery<T extends QueryCreator<MailTables>>(db: T) {
  return db
    .selectFrom('messages')
    .leftJoin('outbound as delivery', (join) => join.onRef('delivery.message_id', '=', 'messages.id').onRef('delivery.workspace_id', '=', 'messages.workspace_id'));
}
/** The delivery state's columns of a message row: both null for an inbound message. */
export const DELIVERY_COLUMNS = ['delivery.status as out_status', 'delivery.attempts_json as out_events', 'delivery.send_at as out_send_at'] as const;
export type DeliveryColumns = { out_status: DeliveryStatus | null; out_events: string | null; out_send_at: number | null };
/** What the views that show a delivery recipient by recipient (`GET /sent`, single messages) read besides. */
export const DELIVERY_DETAIL_COLUMNS = ['delivery.recipients_json as out_recipients', 'delivery.last_error as out_last_error', 'delivery.delivery_notification as out_delivery_notification'] as const;
export type DeliveryDetailColumns = DeliveryColumns & { out_recipients: string | null; out_last_error: string | null; out_delivery_notification: number | null };

/** A whole message row (single lookups, which also need its mailbox, envelope and bookkeeping). */
const LIST_COLUMNS = [...PAGE_COLUMNS, 'messages.workspace_id', 'messages.mailbox_id', 'messages.envelope_json', 'messages.updated_at', 'messages.uid', 'messages.modseq', 'messages.deleted'] as const;

/** Without `from_address`: a search key, which no view reads (`from_json` is the sender). */
export type MessageRow = Omit<MessageTable, 'from_address'> & { mailbox_address: string };
/** A message row as `storeCopy` returns it: its UID and modseq are the database's (PostgreSQL writes the row later in the transaction). */
export type StoredMessageRow = Omit<MessageRow, 'uid' | 'modseq'>;
/** A message row as the views read it (single lookups, thread views): with its delivery state. */
export type MessageViewRow = MessageRow & DeliveryColumns;
/** A single lookup's row: with its delivery state recipient by recipient. */
export type MessageDetailRow = MessageViewRow & DeliveryDetailColumns;
export type MessagePageRow = Pick<MessageRow, 'id' | 'thread_id' | 'direction' | 'folder' | 'read' | 'labels' | 'from_json' | 'to_json' | 'cc_json' | 'subject' | 'snippet' | 'size' | 'date' | 'internet_message_id' | 'auth_json' | 'attachments_json' | 'created_at' | 'flagged' | 'answered' | 'mailbox_address'>;
export type ThreadRow = ThreadTable & { mailbox_address: string };
/** A subquery of thread ids (`SELECT messages.thread_id …`). */
export type ThreadIdQuery = SelectQueryBuilder<MailTables, keyof MailTables, { thread_id: string }>;
/** What a message's organising operations need of its row. */
export type MessageRef = Pick<MessageRow, 'id' | 'thread_id' | 'mailbox_id' | 'folder' | 'read' | 'size' | 'uid'>;

export interface MessageFilter {
  mailboxId?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  threadId?: string | undefined;
  unread?: boolean | undefined;
  /** Only starred (\\Flagged) messages: the partial index `messages_flagged_idx` holds just those. */
  flagged?: true | undefined;
}

/** A filter as the queries bind it: `read` instead of `unread`. */
export type BoundFilter = {
  mailboxId?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  threadId?: string | undefined;
  read?: number | undefined;
  flagged?: true | undefined;
};

/** The `read` column value an `unread` filter asks for. */
const readFor = (unread: boolean | undefined): number | undefined => (unread === undefined ? undefined : unread ? 0 : 1);

export function bound(filter: MessageFilter): BoundFilter {
  return { mailboxId: filter.mailboxId, folder: filter.folder, label: filter.label, threadId: filter.threadId, read: readFor(filter.unread), flagged: filter.flagged };
}

/** Messages of the workspace with their mailbox and their delivery state (which a statement reads only if it selects it). */
export function filtered(db: QueryCreator<MailTables>, workspaceId: string, filter: BoundFilter) {
  let query = withDelivery(db)
    .innerJoin('mailboxes', 'mailboxes.id', 'messages.mailbox_id')
    .where('messages.workspace_id', '=', workspaceId);
  if (filter.mailboxId !== undefined) query = query.where('messages.mailbox_id', '=', filter.mailboxId);
  if (filter.folder !== undefined) query = query.where('messages.folder', '=', filter.folder);
  if (filter.threadId !== undefined) query = query.where('messages.thread_id', '=', filter.threadId);
  if (filter.read !== undefined) query = query.where('messages.read', '=', filter.read);
  // A literal, so that both databases (a prepared statement's generic plan too) take the partial index.
  if (filter.flagged === true) query = query.where('messages.flagged', '=', sql.lit(1));
  if (filter.label !== undefined) {
    const label = filter.label;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('message_labels')
          .select(sql<number>`1`.as('one'))
          .whereRef('message_labels.message_id', '=', 'messages.id')
          .where('message_labels.label', '=', label),
      ),
    );
  }
  return query;
}

type PageParams = BoundFilter & { workspaceId: string; limit: number; offset: number };
type PageWithTotalsParams = { workspaceId: string; mailboxAddress?: string | undefined; folder?: string | undefined; read?: number | undefined; limit: number; offset: number };

/** The filter's markers: a condition for each filter that is given (each combination is its own statement). */
function markers(p: Param): BoundFilter {
  return {
    mailboxId: p.has('mailboxId') ? p<string>('mailboxId') : undefined,
    folder: p.has('folder') ? p<string>('folder') : undefined,
    label: p.has('label') ? p<string>('label') : undefined,
    threadId: p.has('threadId') ? p<string>('threadId') : undefined,
    read: p.has('read') ? p<number>('read') : undefined,
    flagged: p.has('flagged') ? true : undefined,
  };
}

function newestFirst<Q extends SelectQueryBuilder<MailTables, 'messages', object>>(query: Q, p: Param): Q {
  // Ordering and limits keep the query's tables and selection: the builder is still a Q.
  return query.orderBy('messages.created_at', 'desc').orderBy('messages.id', 'desc').limit(p<number>('limit')).offset(p<number>('offset')) as Q;
}

// A page of messages and its totals are asked by every list request (prepared: see db/prepared.ts).
const pageRowsQuery = preparedQuery<PageParams, MessagePageRow & DeliveryColumns, MailTables>((db, p) =>
  newestFirst(filtered(db, p<string>('workspaceId'), markers(p)).select([...PAGE_COLUMNS, ...DELIVERY_COLUMNS]), p),
);
/** A page of `GET /sent`: the rows of a page with their delivery state recipient by recipient. */
const sentRowsQuery = preparedQuery<PageParams, MessagePageRow & DeliveryDetailColumns, MailTables>((db, p) =>
  newestFirst(filtered(db, p<string>('workspaceId'), markers(p)).select([...PAGE_COLUMNS, ...DELIVERY_COLUMNS, ...DELIVERY_DETAIL_COLUMNS]), p),
);
/** A row of `pageWithTotalsQuery`: a message with its delivery state, the totals, and its mailbox's address (only when not filtered by mailbox). */
type TotalsPageRow = Omit<MessagePageRow, 'mailbox_address'> &
  DeliveryColumns & {
    mailbox_address?: string;
    total: number | string;
    unread: number | string;
    /** Filtered by mailbox only: the mailbox and its folders' summed modseq, which name the page's version. */
    mailbox_id?: string;
    modseq?: number | string;
  };
/** The folder counters' sums and whether the mailbox exists (`mailbox_id` null: no such mailbox here). */
type CounterSumsRow = { total: number | string; unread: number | string; modseq: number | string; mailbox_id: string | null };

/** The mailbox named by address (`mailboxAddress`) in the workspace, as a scalar subquery of its id. */
function mailboxByAddress(db: MailDb, p: Param) {
  return db.selectFrom('mailboxes').select('mailboxes.id').where('mailboxes.workspace_id', '=', p<string>('workspaceId')).where('mailboxes.address', '=', p<string>('mailboxAddress'));
}

/** The folder counters of the filter (mailbox by address, folder), to be summed. */
function countersOf(db: MailDb, p: Param) {
  let counters = db.selectFrom('folder_counts').where('folder_counts.workspace_id', '=', p<string>('workspaceId'));
  if (p.has('mailboxAddress')) counters = counters.where('folder_counts.mailbox_id', '=', mailboxByAddress(db, p));
  if (p.has('folder')) counters = counters.where('folder_counts.folder', '=', p<string>('folder'));
  return counters;
}

/** A folder counter column summed over the counters of a filter (0 when there are none). */
const sumOf = (column: 'total' | 'unread' | 'modseq') => (eb: ExpressionBuilder<MailTables, 'folder_counts'>) => eb.fn.coalesce(eb.fn.sum<number>(column), eb.lit(0)).as(column);

/**
 * A page (filters: mailbox by address, folder, read) with the folder counters' sums as two uncorrelated
 * scalar subqueries, which both databases evaluate once per statement: one statement (one round trip on
 * PostgreSQL), no sort or copy of the page beyond the index walk. Filtered by mailbox, the rows need no
 * join to `mailboxes` (the caller knows the address), and a third sum, of the counters' modseqs, with the
 * rows' mailbox id gives the page's version in the same snapshot (`pageAndVersion`). An empty page gives no
 * row, and so no totals: `counterSumsQuery` answers those. Not the counters' row left-joined to the page: that
 * made both databases materialise and sort the page again (decision 177; figures in bench/HISTORY.md).
 */
const pageWithTotalsQuery = preparedQuery<PageWithTotalsParams, TotalsPageRow, MailTables>((db, p) => {
  const sums = countersOf(db, p);
  const totals = [sums.select(sumOf('total')).$asScalar().as('total'), sums.select(sumOf('unread')).$asScalar().as('unread')];
  let page = withDelivery(db).where('messages.workspace_id', '=', p<string>('workspaceId'));
  if (p.has('folder')) page = page.where('messages.folder', '=', p<string>('folder'));
  if (p.has('read')) page = page.where('messages.read', '=', p<number>('read'));
  if (p.has('mailboxAddress')) {
    const version = [sums.select(sumOf('modseq')).$asScalar().as('modseq'), 'messages.mailbox_id'] as const;
    return newestFirst(page.where('messages.mailbox_id', '=', mailboxByAddress(db, p)).select([...totals, ...version, ...MESSAGE_COLUMNS, ...DELIVERY_COLUMNS]), p);
  }
  return newestFirst(page.innerJoin('mailboxes', 'mailboxes.id', 'messages.mailbox_id').select([...totals, ...PAGE_COLUMNS, ...DELIVERY_COLUMNS]), p);
});
/** The counters' sums alone (an empty page, a page's version), with whether the mailbox exists. */
const counterSumsQuery = preparedQuery<Omit<PageWithTotalsParams, 'read' | 'limit' | 'offset'>, CounterSumsRow, MailTables>((db, p) =>
  countersOf(db, p).select((eb) => [
    sumOf('total')(eb),
    sumOf('unread')(eb),
    sumOf('modseq')(eb),
    p.has('mailboxAddress') ? mailboxByAddress(db, p).$asScalar().as('mailbox_id') : sql<string | null>`null`.as('mailbox_id'),
  ]),
);

/** A page's version as one string (see `pageAndVersion`): the mailbox id and the summed modseq. */
const versionOf = (mailboxId: string, modseq: number | string | null | undefined): string => `${mailboxId}:${String(modseq ?? 0)}`;

/** Whether a row's delivery may still change: only `scheduled`, `queued` and `processing` lead anywhere. */
const deliveryMoving = (row: { out_status: string | null }): boolean => row.out_status === 'scheduled' || row.out_status === 'queued' || row.out_status === 'processing';

// Single-message reads of the send and delivery paths (prepared: see db/prepared.ts).
const findMessageQuery = preparedQuery<{ workspaceId: string; messageId: string }, MessageDetailRow, MailTables>((db, p) =>
  filtered(db, p<string>('workspaceId'), {})
    .select([...LIST_COLUMNS, ...DELIVERY_COLUMNS, ...DELIVERY_DETAIL_COLUMNS])
    .where('messages.id', '=', p<string>('messageId')),
);
/**
 * A message (list-view columns) with its raw source, as a query to narrow and extend: the delivery worker joins
 * its delivery state to it, so that a delivery reads everything it needs in one statement.
 */
export function messageWithRawQuery(db: QueryCreator<MailTables>, workspaceId: string) {
  return filtered(db, workspaceId, {})
    .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
    .select([...LIST_COLUMNS, 'message_contents.raw']);
}
const findContentQuery = preparedQuery<{ workspaceId: string; messageId: string; withRaw?: true | undefined }, Partial<MessageContentTable>, MailTables>((db, p) =>
  db
    .selectFrom('message_contents')
    .select(p.has('withRaw') ? ['text_body', 'html_body', 'headers_json', 'raw'] : ['text_body', 'html_body', 'headers_json'])
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('message_id', '=', p<string>('messageId')),
);

const bumpFolderQuery = preparedWrite<{ workspaceId: string; mailboxId: string; folder: string; total: number; unread: number; bytes: number; uids: number; uidvalidity: number }, MailTables>((db, p) =>
  db
    .insertInto('folder_counts')
    .values({
      workspace_id: p('workspaceId'),
      mailbox_id: p('mailboxId'),
      folder: p('folder'),
      total: p('total'),
      unread: p('unread'),
      modseq: 1,
      bytes: p('bytes'),
      uidnext: sql<number>`1 + ${p<number>('uids')}`,
      uidvalidity: p('uidvalidity'),
    })
    .onConflict((oc) =>
      oc.columns(['mailbox_id', 'folder']).doUpdateSet({
        total: sql<number>`${sql.ref('folder_counts.total')} + ${p<number>('total')}`,
        unread: sql<number>`${sql.ref('folder_counts.unread')} + ${p<number>('unread')}`,
        modseq: sql<number>`${sql.ref('folder_counts.modseq')} + 1`,
        bytes: sql<number>`${sql.ref('folder_counts.bytes')} + ${p<number>('bytes')}`,
        uidnext: sql<number>`${sql.ref('folder_counts.uidnext')} + ${p<number>('uids')}`,
      }),
    ),
);

/** The folder key of IMAP's Drafts in `folder_counts` and `mail_expunged`: no message is ever in a folder of this name (draft-folder.store.ts). */
export const DRAFTS_FOLDER = 'drafts';

/**
 * Add to a folder's counters (negative to take away), creating the row on first use, and raise its modseq.
 * The rule the page cache stands on: every transaction that changes a message of a folder (stores, deletes,
 * moves it in or out, flips its read flag, changes its labels, its flags, its date or a final delivery state) calls
 * this for that folder, with 0, 0 when the counts stay, so that a page's version (`pageAndVersion`) changes with it.
 * The same counter is the folder's HIGHESTMODSEQ for mail clients, and the changed messages take its new value
 * (`stampModseq`, or the message INSERT's own subquery), which is why this runs before they are stamped: the row
 * lock it takes holds the value until the transaction ends (lock order: thread, then folder counters in
 * folder-name order; storing a message takes its folder's counter first, see copy.store.ts).
 * `bytes`: the raw size of the messages stored (negative: deleted, moved out); the workspace's stored bytes, which
 * its `stored_bytes` quota is checked against, are the sum of these (`mailUsage`), so every operation that adds,
 * deletes or moves a message passes its size here. `uids`: how many UIDs the caller takes from the folder's
 * `uidnext` (messages stored or moved in); they are `uidnext - uids` … `uidnext - 1` after this.
 * Being the one place every change of a folder passes, it also rings "mailbox changed" after the commit
 * (mail-changes.ts), which mail clients' IDLE waits on.
 */
export async function bumpFolder(db: MailDb, workspaceId: string, mailboxId: string, folder: string, total: number, unread: number, bytes: number, uids = 0): Promise<void> {
  await mailChanged(db, workspaceId, mailboxId);
  // UIDVALIDITY only has to differ from any earlier row of the same mailbox and folder name; the wall clock's
  // seconds do that (a mailbox deleted and made again within the same second is the only way to repeat it).
  return bumpFolderQuery(db, { workspaceId, mailboxId, folder, total, unread, bytes, uids, uidvalidity: Math.floor(Date.now() / 1000) });
}

/** The folder counter's row of a message's folder, as a scalar subquery reading `column`. */
function folderCounter(eb: ExpressionBuilder<MailTables, 'messages'>, column: 'uidnext' | 'modseq') {
  return eb
    .selectFrom('folder_counts')
    .select(`folder_counts.${column}`)
    .whereRef('folder_counts.mailbox_id', '=', 'messages.mailbox_id')
    .whereRef('folder_counts.folder', '=', 'messages.folder')
    .$asScalar()
    .$castTo<number>();
}

/**
 * Give the messages `ids` (of one workspace) their folders' current modseq: after `bumpFolder` raised it in this
 * transaction, whose row lock keeps it ours until commit. One statement for any number of messages.
 */
export async function stampModseq(db: MailDb, workspaceId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const query = db
    .updateTable('messages')
    .set((eb) => ({ modseq: folderCounter(eb, 'modseq') }))
    .where('messages.workspace_id', '=', workspaceId)
    .where('messages.id', 'in', ids);
  // Nobody reads its result: on PostgreSQL it waits for the transaction's next statement (after the bump it reads).
  await db.executeQuery(deferrableWrite(query.compile()));
}

/** The columns of a new message row the caller gives (`uid` and `modseq` come from its folder's counter). */
export type NewMessageRow = Omit<MessageTable, 'uid' | 'modseq'>;
const NEW_MESSAGE_COLUMNS = [
  'id', 'workspace_id', 'mailbox_id', 'thread_id', 'direction', 'folder', 'read', 'labels', 'from_json', 'from_address', 'to_json', 'cc_json', 'subject', 'snippet', 'size',
  'date', 'internet_message_id', 'auth_json', 'attachments_json', 'envelope_json', 'created_at', 'updated_at', 'flagged', 'answered', 'deleted',
] as const satisfies ReadonlyArray<keyof NewMessageRow>;

/**
 * INSERT a message with its folder's new UID (`uidnext - 1`) and modseq read from the folder's counter in the same
 * statement: `bumpFolder` (with `uids` 1) must have run before it in the transaction. On PostgreSQL both are
 * deferred writes (db/write-coalescing.ts): this one names `folder_counts`, so it is never sent in one statement with
 * a waiting write of that table (it would read the counter as it was before), and an earlier bump of the same
 * transaction is always sent first. Later units of a group commit may bump the counter in the statement that carries
 * this INSERT: sub-statements share one snapshot, so it still reads the value its own bump left.
 */
const insertMessageQuery = preparedWrite<NewMessageRow, MailTables>((db, p) => {
  const counter = (column: 'uidnext' | 'modseq') =>
    db
      .selectFrom('folder_counts')
      .select(column === 'uidnext' ? sql<number>`${sql.ref('folder_counts.uidnext')} - 1`.as('v') : sql<number>`${sql.ref('folder_counts.modseq')}`.as('v'))
      .where('folder_counts.workspace_id', '=', p<string>('workspace_id'))
      .where('folder_counts.mailbox_id', '=', p<string>('mailbox_id'))
      .where('folder_counts.folder', '=', p<string>('folder'))
      .$asScalar();
  const values = Object.fromEntries(NEW_MESSAGE_COLUMNS.map((column) => [column, p(column)])) as unknown as NewMessageRow;
  return db.insertInto('messages').values({ ...values, uid: counter('uidnext'), modseq: counter('modseq') });
});

/** Store a new message row (see `insertMessageQuery`); its folder's counter was bumped with `uids` 1 just before. */
export function insertMessage(db: MailDb, row: NewMessageRow): Promise<void> {
  return insertMessageQuery(db, row);
}

/** Message rows in one INSERT: fewer than PostgreSQL's and SQLite's limits on bound values (about 30 a row). */
const MESSAGES_PER_INSERT = 500;

/**
 * `insertMessage` for several copies: a copy takes the UID `uidnext - uidOffset` of its folder, whose counter was
 * bumped once for all of the folder's copies (`uids` their number; offsets from that number down to 1, in order).
 * One statement (per 500 rows), built anew: its shape varies with the number of rows.
 */
export async function insertMessages(db: MailDb, copies: readonly { row: NewMessageRow; uidOffset: number }[]): Promise<void> {
  if (copies.length === 1 && copies[0]!.uidOffset === 1) return insertMessage(db, copies[0]!.row);
  const counter = (row: NewMessageRow, column: 'uidnext' | 'modseq') =>
    db.selectFrom('folder_counts').select(column).where('folder_counts.workspace_id', '=', row.workspace_id).where('folder_counts.mailbox_id', '=', row.mailbox_id).where('folder_counts.folder', '=', row.folder);
  for (let start = 0; start < copies.length; start += MESSAGES_PER_INSERT) {
    const values = copies.slice(start, start + MESSAGES_PER_INSERT).map(({ row, uidOffset }) => ({ ...row, uid: sql<number>`(${counter(row, 'uidnext')}) - ${uidOffset}`, modseq: sql<number>`(${counter(row, 'modseq')})` }));
    // Nobody reads its result: on PostgreSQL it goes with the transaction's next statement, as `insertMessage` does.
    await db.executeQuery(deferrableWrite(db.insertInto('messages').values(values).compile()));
  }
}

const readThreadQuery = preparedQuery<{ workspaceId: string; threadId: string }, ThreadTable, MailTables>((db, p) =>
  db.selectFrom('threads').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('id', '=', p<string>('threadId')),
);
const lockThreadQuery = preparedQuery<{ workspaceId: string; threadId: string }, ThreadTable, MailTables>((db, p) =>
  db.selectFrom('threads').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('id', '=', p<string>('threadId')).forUpdate(),
);

/** Read a thread for update: with `rowLocks` (PostgreSQL) the row stays locked until the transaction ends. */
export async function lockThread(db: MailDb, workspaceId: string, threadId: string, rowLocks: boolean): Promise<ThreadTable | undefined> {
  return (await (rowLocks ? lockThreadQuery : readThreadQuery)(db, { workspaceId, threadId }))[0];
}

/** `lockThread` for several threads in one statement, locked in id order (the order every batch takes them in). */
export async function lockThreads(db: MailDb, workspaceId: string, threadIds: readonly string[], rowLocks: boolean): Promise<ThreadTable[]> {
  if (threadIds.length <= 1) {
    const row = threadIds[0] === undefined ? undefined : await lockThread(db, workspaceId, threadIds[0], rowLocks);
    return row ? [row] : [];
  }
  const query = db.selectFrom('threads').selectAll().where('workspace_id', '=', workspaceId).where('id', 'in', threadIds).orderBy('id');
  return (rowLocks ? query.forUpdate() : query).execute();
}

/** One message with its mailbox and delivery state (the single lookup every other read of a message shares). */
export async function findMessageRow(db: MailDb, workspaceId: string, messageId: string): Promise<MessageDetailRow | undefined> {
  return (await findMessageQuery(db, { workspaceId, messageId }))[0];
}

/** A thread's messages, oldest first. */
export function threadMessageRows(db: MailDb, workspaceId: string, threadId: string): Promise<MessageViewRow[]> {
  return filtered(db, workspaceId, { threadId })
    .select([...LIST_COLUMNS, ...DELIVERY_COLUMNS])
    .orderBy('messages.created_at', 'asc')
    .orderBy('messages.id', 'asc')
    .execute();
}

/** Threads newest first; `matching`: only those with a message among the subquery's (a search). */
export async function threadRows(
  db: MailDb,
  workspaceId: string,
  filter: { mailboxId?: string | undefined; label?: string | undefined; matching?: ThreadIdQuery | undefined },
  limit: number,
  offset: number,
): Promise<{ rows: ThreadRow[]; total: number }> {
  let query = db.selectFrom('threads').innerJoin('mailboxes', 'mailboxes.id', 'threads.mailbox_id').where('threads.workspace_id', '=', workspaceId);
  if (filter.mailboxId !== undefined) query = query.where('threads.mailbox_id', '=', filter.mailboxId);
  if (filter.matching !== undefined) query = query.where('threads.id', 'in', filter.matching);
  if (filter.label !== undefined) {
    const label = filter.label;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('message_labels')
          .innerJoin('messages', 'messages.id', 'message_labels.message_id')
          .select(sql<number>`1`.as('one'))
          .whereRef('messages.thread_id', '=', 'threads.id')
          .where('message_labels.label', '=', label),
      ),
    );
  }
  const [rows, count] = await Promise.all([
    query.selectAll('threads').select('mailboxes.address as mailbox_address').orderBy('threads.last_message_at', 'desc').orderBy('threads.id', 'desc').limit(limit).offset(offset).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** A page of one mailbox (by address) or of the workspace, with its totals and version (`pageAndVersion`). */
export interface VersionedPage {
  /** False when the workspace has no mailbox at the address asked for. */
  mailboxFound: boolean;
  /** The folder counters' sums over the page's folders (all messages, and the unread ones). */
  total: number;
  unread: number;
  rows: Array<MessagePageRow & DeliveryColumns>;
  /**
   * What names this exact page while no message of its folders changes: the mailbox's id and the sum of its
   * folders' modseqs, read in the page's own statement. Undefined when the page must not be kept: not one
   * mailbox's, or showing a delivery still on its way (its status and events change without a modseq: decision 216).
   */
  version: string | undefined;
}

/** The operations of messages as stored: reading them, and the folder counters. */
export function createMessageStore() {
  return {
    findMessage: (work: Work, workspaceId: string, messageId: string) => findMessageRow(mailDb(work), workspaceId, messageId),
    findContent: async (work: Work, workspaceId: string, messageId: string, withRaw: boolean): Promise<Partial<MessageContentTable> | undefined> =>
      (await findContentQuery(mailDb(work), { workspaceId, messageId, withRaw: withRaw ? true : undefined }))[0],
    /** rspamd's verdict on a message, when it was scored on arrival. */
    async spamOf(work: Work, workspaceId: string, messageId: string): Promise<SpamView | null> {
      const row = await mailDb(work)
        .selectFrom('message_spam')
        .select(['score', 'action', 'symbols_json'])
        .where('workspace_id', '=', workspaceId)
        .where('message_id', '=', messageId)
        .executeTakeFirst();
      return row ? { score: Number(row.score), action: row.action, symbols: JSON.parse(row.symbols_json) as SpamView['symbols'] } : null;
    },
    findAttachment: (work: Work, workspaceId: string, messageId: string, attachmentId: string): Promise<Pick<AttachmentTable, 'id' | 'filename' | 'content_type' | 'size' | 'content'> | undefined> =>
      mailDb(work)
        .selectFrom('attachments')
        .select(['id', 'filename', 'content_type', 'size', 'content'])
        .where('workspace_id', '=', workspaceId)
        .where('message_id', '=', messageId)
        .where('id', '=', attachmentId)
        .executeTakeFirst(),
    /** A message's files with their bytes, in the order they were stored (ids are monotonic). */
    attachmentContents: (work: Work, workspaceId: string, messageId: string): Promise<AttachmentTable[]> =>
      mailDb(work).selectFrom('attachments').selectAll().where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).orderBy('id').execute(),
    findThread: (work: Work, workspaceId: string, threadId: string): Promise<ThreadRow | undefined> =>
      mailDb(work)
        .selectFrom('threads')
        .innerJoin('mailboxes', 'mailboxes.id', 'threads.mailbox_id')
        .selectAll('threads')
        .select('mailboxes.address as mailbox_address')
        .where('threads.workspace_id', '=', workspaceId)
        .where('threads.id', '=', threadId)
        .executeTakeFirst(),
    threadMessages: (work: Work, workspaceId: string, threadId: string) => threadMessageRows(mailDb(work), workspaceId, threadId),
    threadPage: (work: Work, workspaceId: string, filter: { mailboxId?: string | undefined; label?: string | undefined }, limit: number, offset: number) =>
      threadRows(mailDb(work), workspaceId, filter, limit, offset),

    /** A page of messages by any filter, newest first, with the number of messages the filter matches. */
    async messagePage(work: Work, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<{ rows: Array<MessagePageRow & DeliveryColumns>; total: number }> {
      const db = mailDb(work);
      const [rows, total] = await Promise.all([pageRowsQuery(db, { ...bound(filter), workspaceId, limit, offset }), countMessages(db, workspaceId, filter)]);
      return { rows, total };
    },
    /** A page of messages, newest first, each with its delivery state recipient by recipient (`GET /sent`), and the count. */
    async deliveryPage(work: Work, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<{ rows: Array<MessagePageRow & DeliveryDetailColumns>; total: number }> {
      const db = mailDb(work);
      const [rows, total] = await Promise.all([sentRowsQuery(db, { ...bound(filter), workspaceId, limit, offset }), countMessages(db, workspaceId, filter)]);
      return { rows, total };
    },

    /**
     * A page filtered by mailbox (address), folder and read state, with the folder counters' totals and its
     * version: one statement, a second one only when the page is empty. Every row carries its mailbox's address.
     */
    async pageAndVersion(work: Work, workspaceId: string, filter: { mailboxAddress?: string | undefined; folder?: string | undefined; unread?: boolean | undefined }, limit: number, offset: number): Promise<VersionedPage> {
      const db = mailDb(work);
      const { mailboxAddress, folder } = filter;
      const rows = await pageWithTotalsQuery(db, { workspaceId, mailboxAddress, folder, read: readFor(filter.unread), limit, offset });
      if (rows.length > 0) {
        const first = rows[0]!;
        if (mailboxAddress !== undefined) for (const row of rows) row.mailbox_address = mailboxAddress;
        const version = first.mailbox_id === undefined || rows.some(deliveryMoving) ? undefined : versionOf(first.mailbox_id, first.modseq);
        return { mailboxFound: true, total: Number(first.total), unread: Number(first.unread), rows: rows as Array<MessagePageRow & DeliveryColumns>, version };
      }
      const sums = (await counterSumsQuery(db, { workspaceId, mailboxAddress, folder }))[0]!;
      return { mailboxFound: mailboxAddress === undefined || sums.mailbox_id !== null, total: Number(sums.total), unread: Number(sums.unread), rows: [], version: undefined };
    },
    /**
     * The version of the page `pageAndVersion` reads for a mailbox (and folder): equal to the version that page
     * was read with while no message of those folders changed. Undefined when there is no such mailbox.
     */
    async pageVersion(work: Work, workspaceId: string, mailboxAddress: string, folder: string | undefined): Promise<string | undefined> {
      const sums = (await counterSumsQuery(mailDb(work), { workspaceId, mailboxAddress, folder }))[0]!;
      return sums.mailbox_id === null ? undefined : versionOf(sums.mailbox_id, sums.modseq);
    },

    /** Raise a folder's counters and modseq (see `bumpFolder`): for the mail store's own operations and its tests. */
    bumpFolder: (work: Work, workspaceId: string, mailboxId: string, folder: string, total: number, unread: number, bytes = 0) => bumpFolder(mailDb(work), workspaceId, mailboxId, folder, total, unread, bytes),

    /** The workspace's mail in numbers: its mailboxes, its counters summed per folder, its threads. */
    async mailStats(work: Work, workspaceId: string): Promise<{ mailboxes: number; folders: Array<{ folder: string; total: number | string; unread: number | string }>; threads: number }> {
      const db = mailDb(work);
      const [mailboxes, folders, threads] = await Promise.all([
        db.selectFrom('mailboxes').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow(),
        db
          .selectFrom('folder_counts')
          .select((eb) => ['folder', eb.fn.sum<number>('total').as('total'), eb.fn.sum<number>('unread').as('unread')])
          .where('workspace_id', '=', workspaceId)
          // Drafts' counter (IMAP's Drafts) counts no message and is no folder of the API.
          .where('folder', '!=', DRAFTS_FOLDER)
          .groupBy('folder')
          .execute(),
        db.selectFrom('threads').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow(),
      ]);
      return { mailboxes: Number(mailboxes.n), folders, threads: Number(threads.n) };
    },
  };
}

/** How many messages of the workspace a filter matches. */
export async function countMessages(db: MailDb, workspaceId: string, filter: MessageFilter): Promise<number> {
  return Number((await filtered(db, workspaceId, bound(filter)).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
}

/** A page of `GET /sent`'s rows alone (see `deliveryPage`). */
export function deliveryRows(db: MailDb, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<Array<MessagePageRow & DeliveryDetailColumns>> {
  return sentRowsQuery(db, { ...bound(filter), workspaceId, limit, offset });
}


/** Give a message labels (those it has already are kept as they are). */
export function insertLabels(db: MailDb, workspaceId: string, messageId: string, labels: readonly string[]): Promise<void> {
  return insertLabelRows(db, labels.map((label) => ({ message_id: messageId, workspace_id: workspaceId, label })));
}

/** `insertLabels` for the labels of several messages in one statement. */
export function insertLabelRows(db: MailDb, rows: readonly { message_id: string; workspace_id: string; label: string }[]): Promise<void> {
  return insertRows(db, 'message_labels', rows, { ignoreConflicts: true });
}
