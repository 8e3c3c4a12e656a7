import { sql, type ExpressionBuilder, type QueryCreator, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { DeliveryStatus } from '../mail/outbound.table.js';
import { insertRows, preparedQuery, preparedWrite, type Param } from '../../db/prepared.js';
import type {
  AttachmentTable,
  MessageContentTable,
  MessageTable,
  ThreadTable,
} from './message.table.js';

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
] as const;
/** What a page of messages reads: the list view's columns, with the mailbox's address. */
export const PAGE_COLUMNS = [...MESSAGE_COLUMNS, 'mailboxes.address as mailbox_address'] as const;

/**
 * An outbound message's delivery state as its views show it (contract §4: "Outbound messages add `status` and
 * `events`"): the `outbound` row, joined as `delivery` (the delivery worker joins `outbound` under its own name).
 * Inbound messages have no such row, and their views no such fields.
 */
function withDelivery<T extends QueryCreator<Database>>(db: T) {
  return db
    .selectFrom('messages')
    .leftJoin('outbound as delivery', (join) => join.onRef('delivery.message_id', '=', 'messages.id').onRef('delivery.workspace_id', '=', 'messages.workspace_id'));
}
/** The delivery state's columns of a message row: both null for an inbound message. */
export const DELIVERY_COLUMNS = ['delivery.status as out_status', 'delivery.attempts_json as out_events', 'delivery.send_at as out_send_at'] as const;
export type DeliveryColumns = { out_status: DeliveryStatus | null; out_events: string | null; out_send_at: number | null };
/** What the views that show a delivery recipient by recipient (`GET /sent`, single messages) read besides. */
export const DELIVERY_DETAIL_COLUMNS = ['delivery.recipients_json as out_recipients', 'delivery.last_error as out_last_error'] as const;
export type DeliveryDetailColumns = DeliveryColumns & { out_recipients: string | null; out_last_error: string | null };

/** A whole message row (single lookups, which also need its mailbox, envelope and bookkeeping). */
const LIST_COLUMNS = [...PAGE_COLUMNS, 'messages.workspace_id', 'messages.mailbox_id', 'messages.envelope_json', 'messages.updated_at'] as const;

export type MessageRow = MessageTable & { mailbox_address: string };
/** A message row as the views read it (single lookups, thread views): with its delivery state. */
export type MessageViewRow = MessageRow & DeliveryColumns;
/** A single lookup's row: with its delivery state recipient by recipient. */
export type MessageDetailRow = MessageViewRow & DeliveryDetailColumns;
export type MessagePageRow = Pick<MessageRow, 'id' | 'thread_id' | 'direction' | 'folder' | 'read' | 'labels' | 'from_json' | 'to_json' | 'cc_json' | 'subject' | 'snippet' | 'size' | 'date' | 'internet_message_id' | 'auth_json' | 'attachments_json' | 'created_at' | 'mailbox_address'>;
export type ThreadRow = ThreadTable & { mailbox_address: string };
/** A subquery of thread ids (`SELECT messages.thread_id …`). */
export type ThreadIdQuery = SelectQueryBuilder<Database, keyof Database, { thread_id: string }>;

export interface MessageFilter {
  mailboxId?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  threadId?: string | undefined;
  unread?: boolean | undefined;
}

/** A filter as the queries bind it: `read` instead of `unread`. */
export type BoundFilter = {
  mailboxId?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  threadId?: string | undefined;
  read?: number | undefined;
};

/** The `read` column value an `unread` filter asks for. */
const readFor = (unread: boolean | undefined): number | undefined => (unread === undefined ? undefined : unread ? 0 : 1);

export function bound(filter: MessageFilter): BoundFilter {
  return { mailboxId: filter.mailboxId, folder: filter.folder, label: filter.label, threadId: filter.threadId, read: readFor(filter.unread) };
}

/** Messages of the workspace with their mailbox and their delivery state (which a statement reads only if it selects it). */
export function filtered(db: QueryCreator<Database>, workspaceId: string, filter: BoundFilter) {
  let query = withDelivery(db)
    .innerJoin('mailboxes', 'mailboxes.id', 'messages.mailbox_id')
    .where('messages.workspace_id', '=', workspaceId);
  if (filter.mailboxId !== undefined) query = query.where('messages.mailbox_id', '=', filter.mailboxId);
  if (filter.folder !== undefined) query = query.where('messages.folder', '=', filter.folder);
  if (filter.threadId !== undefined) query = query.where('messages.thread_id', '=', filter.threadId);
  if (filter.read !== undefined) query = query.where('messages.read', '=', filter.read);
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
  };
}

function newestFirst<Q extends SelectQueryBuilder<Database, 'messages', object>>(query: Q, p: Param): Q {
  // Ordering and limits keep the query's tables and selection: the builder is still a Q.
  return query.orderBy('messages.created_at', 'desc').orderBy('messages.id', 'desc').limit(p<number>('limit')).offset(p<number>('offset')) as Q;
}

// A page of messages and its totals are asked by every list request (prepared: see db/prepared.ts).
const pageRowsQuery = preparedQuery<PageParams, MessagePageRow & DeliveryColumns>((db, p) => newestFirst(filtered(db, p<string>('workspaceId'), markers(p)).select([...PAGE_COLUMNS, ...DELIVERY_COLUMNS]), p));
/** A page of `GET /sent`: the rows of a page with their delivery state recipient by recipient. */
const sentRowsQuery = preparedQuery<PageParams, MessagePageRow & DeliveryDetailColumns>((db, p) =>
  newestFirst(filtered(db, p<string>('workspaceId'), markers(p)).select([...PAGE_COLUMNS, ...DELIVERY_COLUMNS, ...DELIVERY_DETAIL_COLUMNS]), p),
);
/** A row of `pageWithTotals`: a message with its delivery state, the totals, and its mailbox's address (only when not filtered by mailbox). */
type TotalsPageRow = Omit<MessagePageRow, 'mailbox_address'> & DeliveryColumns & {
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
function mailboxByAddress(db: Db, p: Param) {
  return db.selectFrom('mailboxes').select('mailboxes.id').where('mailboxes.workspace_id', '=', p<string>('workspaceId')).where('mailboxes.address', '=', p<string>('mailboxAddress'));
}

/** The folder counters of the filter (mailbox by address, folder), to be summed. */
function countersOf(db: Db, p: Param) {
  let counters = db.selectFrom('folder_counts').where('folder_counts.workspace_id', '=', p<string>('workspaceId'));
  if (p.has('mailboxAddress')) counters = counters.where('folder_counts.mailbox_id', '=', mailboxByAddress(db, p));
  if (p.has('folder')) counters = counters.where('folder_counts.folder', '=', p<string>('folder'));
  return counters;
}

/** A folder counter column summed over the counters of a filter (0 when there are none). */
const sumOf = (column: 'total' | 'unread' | 'modseq') => (eb: ExpressionBuilder<Database, 'folder_counts'>) => eb.fn.coalesce(eb.fn.sum<number>(column), eb.lit(0)).as(column);

/**
 * A page (filters: mailbox by address, folder, read) with the folder counters' sums as two uncorrelated
 * scalar subqueries, which both databases evaluate once per statement: one statement (one round trip on
 * PostgreSQL), no sort or copy of the page beyond the index walk. Filtered by mailbox, the rows need no
 * join to `mailboxes` (the caller knows the address), and a third sum, of the counters' modseqs, with the
 * rows' mailbox id gives the page's version in the same snapshot (transports/http/page-cache.ts). An empty page gives no row, and so no totals:
 * `counterSumsQuery` answers those. Not the counters' row left-joined to the page: that made both
 * databases materialise and sort the page again (decision 177; figures in bench/HISTORY.md).
 */
const pageWithTotalsQuery = preparedQuery<PageWithTotalsParams, TotalsPageRow>((db, p) => {
  const sums = countersOf(db, p);
  const totals = [
    sums.select(sumOf('total')).$asScalar().as('total'),
    sums.select(sumOf('unread')).$asScalar().as('unread'),
  ];
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
const counterSumsQuery = preparedQuery<Omit<PageWithTotalsParams, 'read' | 'limit' | 'offset'>, CounterSumsRow>((db, p) =>
  countersOf(db, p).select((eb) => [
    sumOf('total')(eb),
    sumOf('unread')(eb),
    sumOf('modseq')(eb),
    p.has('mailboxAddress') ? mailboxByAddress(db, p).$asScalar().as('mailbox_id') : sql<string | null>`null`.as('mailbox_id'),
  ]),
);

/** A page's version as one string (see transports/http/page-cache.ts): the mailbox id and the summed modseq. */
const versionOf = (mailboxId: string, modseq: number | string | null | undefined): string => `${mailboxId}:${String(modseq ?? 0)}`;

// Single-message reads of the send and delivery paths (prepared: see db/prepared.ts).
const findMessageQuery = preparedQuery<{ workspaceId: string; messageId: string }, MessageDetailRow>((db, p) =>
  filtered(db, p<string>('workspaceId'), {})
    .select([...LIST_COLUMNS, ...DELIVERY_COLUMNS, ...DELIVERY_DETAIL_COLUMNS])
    .where('messages.id', '=', p<string>('messageId')),
);
/**
 * A message (list-view columns) with its raw source, as a query to narrow and extend: the delivery worker joins
 * its delivery state to it, so that a delivery reads everything it needs in one statement.
 */
export function messageWithRawQuery(db: QueryCreator<Database>, workspaceId: string) {
  return filtered(db, workspaceId, {})
    .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
    .select([...LIST_COLUMNS, 'message_contents.raw']);
}
const findContentQuery = preparedQuery<{ workspaceId: string; messageId: string; withRaw?: true | undefined }, Partial<MessageContentTable>>((db, p) =>
  db
    .selectFrom('message_contents')
    .select(p.has('withRaw') ? ['text_body', 'html_body', 'headers_json', 'raw'] : ['text_body', 'html_body', 'headers_json'])
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('message_id', '=', p<string>('messageId')),
);

const bumpFolderQuery = preparedWrite<{ workspaceId: string; mailboxId: string; folder: string; total: number; unread: number }>((db, p) =>
  db
    .insertInto('folder_counts')
    .values({ workspace_id: p('workspaceId'), mailbox_id: p('mailboxId'), folder: p('folder'), total: p('total'), unread: p('unread'), modseq: 1 })
    .onConflict((oc) =>
      oc.columns(['mailbox_id', 'folder']).doUpdateSet({
        total: sql<number>`folder_counts.total + ${p<number>('total')}`,
        unread: sql<number>`folder_counts.unread + ${p<number>('unread')}`,
        modseq: sql<number>`folder_counts.modseq + 1`,
      }),
    ),
);

// The store's threading statements run for every stored message (prepared: see db/prepared.ts).
/** A thread a new message may join: by a reference (`message_key` set) or by subject (`participants` set). */
export interface ThreadCandidate {
  thread_id: string;
  message_key: string | null;
  participants: string | null;
  last_message_at: number | null;
}
// Both ways a new message finds its thread in one statement: the threads its references (and its own
// Message-ID) name, and the recent threads of the mailbox with its normalised subject. The subject part
// is wasted when a reference hits, but it is an index lookup, and a second round trip costs more.
const threadCandidatesQuery = preparedQuery<{ workspaceId: string; mailboxId: string; keys?: readonly string[] | undefined; subjectKey?: string | undefined; since: number }, ThreadCandidate>((db, p) => {
  const workspaceId = p<string>('workspaceId');
  const mailboxId = p<string>('mailboxId');
  const recent = db
    .selectFrom('threads')
    .select(['id', 'participants', 'last_message_at'])
    .where('workspace_id', '=', workspaceId)
    .where('mailbox_id', '=', mailboxId)
    .where('subject_key', '=', p<string>('subjectKey'))
    .where('last_message_at', '>=', p<number>('since'))
    .orderBy('last_message_at', 'desc')
    .limit(20);
  const bySubject = db
    .selectFrom(recent.as('s'))
    .select(['s.id as thread_id', sql<string | null>`null`.as('message_key'), 's.participants', 's.last_message_at']);
  if (!p.has('keys')) return bySubject;
  const byRef = db
    .selectFrom('thread_refs')
    .select((eb) => ['thread_id', eb.ref('message_key').$castTo<string | null>().as('message_key'), sql<string | null>`null`.as('participants'), sql<number | null>`null`.as('last_message_at')])
    .where('workspace_id', '=', workspaceId)
    .where('mailbox_id', '=', mailboxId)
    .where('message_key', 'in', p.list<string>('keys'));
  return p.has('subjectKey') ? byRef.unionAll(bySubject) : byRef;
});
const readThreadQuery = preparedQuery<{ workspaceId: string; threadId: string }, ThreadTable>((db, p) =>
  db.selectFrom('threads').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('id', '=', p<string>('threadId')),
);
const lockThreadQuery = preparedQuery<{ workspaceId: string; threadId: string }, ThreadTable>((db, p) =>
  db.selectFrom('threads').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('id', '=', p<string>('threadId')).forUpdate(),
);

export type ThreadUpdate = Pick<ThreadTable, 'participants' | 'message_count' | 'unread_count' | 'labels' | 'snippet' | 'last_message_at' | 'updated_at'>;
const addToThreadQuery = preparedWrite<ThreadUpdate & { workspaceId: string; threadId: string }>((db, p) =>
  db
    .updateTable('threads')
    .set({
      participants: p('participants'),
      message_count: p('message_count'),
      unread_count: p('unread_count'),
      labels: p('labels'),
      snippet: p('snippet'),
      last_message_at: p('last_message_at'),
      updated_at: p('updated_at'),
    })
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('id', '=', p<string>('threadId')),
);

/** Queries of the message store; every one filters by workspace. */
export const messageRepository = {
  insertThread: (db: Db, row: ThreadTable) => insertRows(db, 'threads', [row]),
  insertMessage: (db: Db, row: MessageTable) => insertRows(db, 'messages', [row]),
  insertContent: (db: Db, row: MessageContentTable) => insertRows(db, 'message_contents', [row]),
  insertAttachments: (db: Db, rows: AttachmentTable[]) => insertRows(db, 'attachments', rows),
  insertLabels: (db: Db, workspaceId: string, messageId: string, labels: readonly string[]) =>
    insertRows(db, 'message_labels', labels.map((label) => ({ message_id: messageId, workspace_id: workspaceId, label })), { ignoreConflicts: true }),
  deleteLabels: async (db: Db, workspaceId: string, messageId: string, labels: readonly string[]) => {
    if (labels.length === 0) return;
    await db
      .deleteFrom('message_labels')
      .where('workspace_id', '=', workspaceId)
      .where('message_id', '=', messageId)
      .where('label', 'in', labels)
      .execute();
  },
  labelsOf: async (db: Db, workspaceId: string, messageId: string): Promise<string[]> =>
    (
      await db
        .selectFrom('message_labels')
        .select('label')
        .where('workspace_id', '=', workspaceId)
        .where('message_id', '=', messageId)
        .orderBy('label')
        .execute()
    ).map((r) => r.label),
  /** The union of the labels of a thread's messages. */
  threadLabels: async (db: Db, workspaceId: string, threadId: string): Promise<string[]> =>
    (
      await db
        .selectFrom('message_labels')
        .innerJoin('messages', 'messages.id', 'message_labels.message_id')
        .select('message_labels.label')
        .distinct()
        .where('message_labels.workspace_id', '=', workspaceId)
        .where('messages.thread_id', '=', threadId)
        .orderBy('message_labels.label')
        .execute()
    ).map((r) => r.label),

  /**
   * Threads a new message may join: those its reference keys name, and (with a subject key) the recent threads
   * with that subject since `since`. One statement; no statement at all when there is nothing to look up.
   */
  threadCandidates: async (db: Db, workspaceId: string, mailboxId: string, keys: readonly string[], subjectKey: string, since: number): Promise<ThreadCandidate[]> =>
    keys.length === 0 && subjectKey === ''
      ? []
      : threadCandidatesQuery(db, { workspaceId, mailboxId, keys: keys.length > 0 ? keys : undefined, subjectKey: subjectKey === '' ? undefined : subjectKey, since }),
  insertRefs: (db: Db, workspaceId: string, mailboxId: string, threadId: string, keys: readonly string[]) =>
    insertRows(db, 'thread_refs', keys.map((message_key) => ({ workspace_id: workspaceId, mailbox_id: mailboxId, message_key, thread_id: threadId })), { ignoreConflicts: true }),
  findThread: (db: Db, workspaceId: string, threadId: string): Promise<ThreadRow | undefined> =>
    db
      .selectFrom('threads')
      .innerJoin('mailboxes', 'mailboxes.id', 'threads.mailbox_id')
      .selectAll('threads')
      .select('mailboxes.address as mailbox_address')
      .where('threads.workspace_id', '=', workspaceId)
      .where('threads.id', '=', threadId)
      .executeTakeFirst(),
  /** Read a thread for update: on PostgreSQL the row stays locked until the transaction ends. */
  lockThread: async (db: Db, workspaceId: string, threadId: string, rowLocks: boolean): Promise<ThreadTable | undefined> =>
    (await (rowLocks ? lockThreadQuery : readThreadQuery)(db, { workspaceId, threadId }))[0],
  /** A new message's changes to its thread (the one shape the store writes). */
  addToThread: async (db: Db, workspaceId: string, threadId: string, values: ThreadUpdate) => {
    await addToThreadQuery(db, { ...values, workspaceId, threadId });
  },
  updateThread: (db: Db, workspaceId: string, threadId: string, values: Partial<ThreadTable>) =>
    db.updateTable('threads').set(values).where('workspace_id', '=', workspaceId).where('id', '=', threadId).execute(),
  deleteThread: (db: Db, workspaceId: string, threadId: string) =>
    db.deleteFrom('threads').where('workspace_id', '=', workspaceId).where('id', '=', threadId).execute(),
  /** Threads newest first; `matching`: only those with a message among the subquery's (a search). */
  listThreads: (db: Db, workspaceId: string, filter: { mailboxId?: string | undefined; label?: string | undefined; matching?: ThreadIdQuery | undefined }, limit: number, offset: number) => {
    let query = db
      .selectFrom('threads')
      .innerJoin('mailboxes', 'mailboxes.id', 'threads.mailbox_id')
      .where('threads.workspace_id', '=', workspaceId);
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
    return Promise.all([
      query
        .selectAll('threads')
        .select('mailboxes.address as mailbox_address')
        .orderBy('threads.last_message_at', 'desc')
        .orderBy('threads.id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]).then(([rows, count]) => ({ rows, total: Number(count.n) }));
  },

  /** A page of messages, newest first. */
  listMessages: (db: Db, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<Array<MessagePageRow & DeliveryColumns>> =>
    pageRowsQuery(db, { ...bound(filter), workspaceId, limit, offset }),
  /** A page of messages, newest first, each with its delivery state recipient by recipient (`GET /sent`). */
  listWithDelivery: (db: Db, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<Array<MessagePageRow & DeliveryDetailColumns>> =>
    sentRowsQuery(db, { ...bound(filter), workspaceId, limit, offset }),
  /**
   * A page filtered by mailbox (address), folder and read state, with the folder counters' totals: one
   * statement, a second one only when the page is empty; `mailboxFound` is false when the workspace has
   * no such mailbox. Every row carries its mailbox's address.
   */
  pageWithTotals: async (db: Db, workspaceId: string, filter: { mailboxAddress?: string | undefined; folder?: string | undefined; unread?: boolean | undefined }, limit: number, offset: number) => {
    const { mailboxAddress, folder } = filter;
    const rows = await pageWithTotalsQuery(db, { workspaceId, mailboxAddress, folder, read: readFor(filter.unread), limit, offset });
    if (rows.length > 0) {
      const first = rows[0]!;
      if (mailboxAddress !== undefined) for (const row of rows) row.mailbox_address = mailboxAddress;
      const version = first.mailbox_id === undefined ? undefined : versionOf(first.mailbox_id, first.modseq);
      return { mailboxFound: true, total: Number(first.total), unread: Number(first.unread), rows: rows as Array<MessagePageRow & DeliveryColumns>, version };
    }
    const sums = (await counterSumsQuery(db, { workspaceId, mailboxAddress, folder }))[0]!;
    return { mailboxFound: mailboxAddress === undefined || sums.mailbox_id !== null, total: Number(sums.total), unread: Number(sums.unread), rows: [] as Array<MessagePageRow & DeliveryColumns>, version: undefined };
  },
  /**
   * The version of the page `pageWithTotals` reads for a mailbox (and folder): equal to the version that
   * page was read with while no message of those folders changed. Undefined when there is no such mailbox.
   */
  pageVersion: async (db: Db, workspaceId: string, mailboxAddress: string, folder: string | undefined): Promise<string | undefined> => {
    const sums = (await counterSumsQuery(db, { workspaceId, mailboxAddress, folder }))[0]!;
    return sums.mailbox_id === null ? undefined : versionOf(sums.mailbox_id, sums.modseq);
  },
  countMessages: async (db: Db, workspaceId: string, filter: MessageFilter): Promise<number> =>
    Number((await filtered(db, workspaceId, bound(filter)).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n),
  /** A thread's messages, oldest first. */
  threadMessages: (db: Db, workspaceId: string, threadId: string): Promise<MessageViewRow[]> =>
    filtered(db, workspaceId, { threadId })
      .select([...LIST_COLUMNS, ...DELIVERY_COLUMNS])
      .orderBy('messages.created_at', 'asc')
      .orderBy('messages.id', 'asc')
      .execute(),
  findMessage: async (db: Db, workspaceId: string, messageId: string): Promise<MessageDetailRow | undefined> => (await findMessageQuery(db, { workspaceId, messageId }))[0],
  findContent: async (db: Db, workspaceId: string, messageId: string, withRaw: boolean): Promise<Partial<MessageContentTable> | undefined> =>
    (await findContentQuery(db, { workspaceId, messageId, withRaw: withRaw ? true : undefined }))[0],
  updateMessage: (db: Db, workspaceId: string, messageId: string, values: Partial<MessageTable>) =>
    db.updateTable('messages').set(values).where('workspace_id', '=', workspaceId).where('id', '=', messageId).execute(),
  deleteMessage: (db: Db, workspaceId: string, messageId: string) =>
    db.deleteFrom('messages').where('workspace_id', '=', workspaceId).where('id', '=', messageId).execute(),

  findAttachment: (db: Db, workspaceId: string, messageId: string, attachmentId: string) =>
    db
      .selectFrom('attachments')
      .select(['id', 'filename', 'content_type', 'size', 'content'])
      .where('workspace_id', '=', workspaceId)
      .where('message_id', '=', messageId)
      .where('id', '=', attachmentId)
      .executeTakeFirst(),

  /**
   * Add to a folder's counters (negative to take away), creating the row on first use, and raise its modseq.
   * Every transaction that changes a message of a folder (stores, deletes, moves it in or out, flips its read
   * flag, changes its labels) calls this for that folder, with 0, 0 when the counts stay: cached pages are
   * trusted while the modseq stays (transports/http/page-cache.ts). Called last in the transaction (lock order: thread, then
   * folder counters in folder-name order).
   */
  bumpFolder: (db: Db, workspaceId: string, mailboxId: string, folder: string, total: number, unread: number) =>
    bumpFolderQuery(db, { workspaceId, mailboxId, folder, total, unread }),
  /** The workspace's counters summed per folder. */
  folderBreakdown: (db: Db, workspaceId: string) =>
    db
      .selectFrom('folder_counts')
      .select((eb) => ['folder', eb.fn.sum<number>('total').as('total'), eb.fn.sum<number>('unread').as('unread')])
      .where('workspace_id', '=', workspaceId)
      .groupBy('folder')
      .execute(),
  countThreads: async (db: Db, workspaceId: string) =>
    Number((await db.selectFrom('threads').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n),
} as const;
