/**
 * What mail clients synchronise by (the IMAP server's store operations): a folder's UIDVALIDITY, UIDNEXT and
 * HIGHESTMODSEQ (its `folder_counts` row), its messages by UID with their modseq and flags, the changes and the
 * expunged UIDs since a modseq (CONDSTORE/QRESYNC), flag and keyword changes guarded by UNCHANGEDSINCE, and a
 * lookup by Message-ID. One login is one mailbox; its folders are IMAP mailboxes; `read` is \Seen, labels are
 * keywords. Every statement filters by workspace and mailbox. No IMAP syntax here: UID sets arrive as ranges.
 */
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import { preparedQuery, type Param } from '../../db/prepared.js';
import { copyBinary, type DialectInfo } from '../../db/dialect.js';
import type { BinaryRow } from '../../db/pg-copy-binary.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { StructureBytes } from '../../lib/imap-message/index.js';
import type { MailTables } from './mail.table.js';
import { bumpFolder, insertLabels, mailDb, stampModseq, type MailDb } from './message.store.js';
import type { MessageTable } from './message.table.js';
import { removeMessages, threadLabels, type RemovedMessage } from './organize.store.js';
import { unpackedStructure, withStructure } from './structure.store.js';

/** A folder as a client selects it. */
export interface FolderStatus {
  uidvalidity: number;
  uidnext: number;
  highestmodseq: number;
  /** Messages in the folder, and those not \Seen. */
  total: number;
  unseen: number;
  /** The lowest UID not \Seen; null when all are. */
  firstUnseenUid: number | null;
}

/** A message as a folder's index lists it: UID, modseq, flags and keywords (labels). */
export interface IndexEntry {
  uid: number;
  modseq: number;
  read: boolean;
  flagged: boolean;
  answered: boolean;
  deleted: boolean;
  /** \Draft: set on every draft of Drafts (no message carries it). */
  draft?: boolean;
  labels: string[];
  /** RFC822.SIZE: the raw message's bytes (they never change), so a session can bound its reads without asking. */
  size: number;
}

/** What a FETCH reads of a message besides its index entry; the raw bytes or the kept structure only when asked. */
export interface FetchEntry extends IndexEntry {
  id: string;
  /** INTERNALDATE: when the message was stored (epoch ms). */
  created_at: number;
  raw?: Buffer;
  /** ENVELOPE, BODYSTRUCTURE and BODY as FETCH writes them, when kept (`message_structures`); null: none kept yet. */
  structure?: StructureBytes | null;
}

/** What `messagesByUid` reads beside the index columns: nothing more, the raw source, or the kept structure. */
export type FetchRead = 'index' | 'raw' | 'structure';

/** Inclusive UID ranges (`[from, to]`); `to` may be `Number.MAX_SAFE_INTEGER` for `*`. */
export type UidRanges = ReadonlyArray<readonly [number, number]>;

/** Most ranges one statement takes (a client's UID set is compacted into ranges by the caller). */
export const MAX_UID_RANGES = 1_000;

/** A STORE: the flags and keywords to set, add or remove. */
export interface FlagStore {
  mode: 'set' | 'add' | 'remove';
  /** \Seen, \Flagged, \Answered, \Deleted as columns; those not named are not touched (except by `set`, which clears them). */
  flags: { read?: boolean; flagged?: boolean; answered?: boolean; deleted?: boolean };
  keywords: readonly string[];
  /** CONDSTORE UNCHANGEDSINCE: messages whose modseq is above it are left alone and reported. */
  unchangedSince?: number | undefined;
}

export interface FlagStoreResult {
  /** The messages changed, with their new modseq (the folder's after the change). */
  modified: Array<{ uid: number; modseq: number }>;
  /** UIDs that failed the UNCHANGEDSINCE condition. */
  failed: number[];
}

type Scope = { workspaceId: string; mailboxId: string; folder: string };

const INDEX_COLUMNS = ['messages.uid', 'messages.modseq', 'messages.read', 'messages.flagged', 'messages.answered', 'messages.deleted', 'messages.labels', 'messages.size'] as const;
type IndexRow = Pick<MessageTable, 'uid' | 'modseq' | 'read' | 'flagged' | 'answered' | 'deleted' | 'labels' | 'size'>;

/** A message's labels column; most have none, and that needs no JSON parse. */
const labelsOf = (labels: string): string[] => (labels === '[]' ? [] : (JSON.parse(labels) as string[]));

/** A folder index entry from its flag columns (messages and drafts have the same ones). */
export const toEntry = (row: IndexRow): IndexEntry => ({
  uid: Number(row.uid),
  modseq: Number(row.modseq),
  read: row.read === 1,
  flagged: row.flagged === 1,
  answered: row.answered === 1,
  deleted: row.deleted === 1,
  draft: false,
  labels: labelsOf(row.labels),
  size: Number(row.size),
});

/**
 * A FETCH entry made as one object of one shape (FETCH reads thousands a second: no spread of the index entry, and
 * every entry has the same fields, so the code that writes them sees a single shape).
 */
function fetchEntryOf(row: IndexRow & Pick<MessageTable, 'id' | 'created_at'>, raw: Buffer | undefined, structure: StructureBytes | null | undefined): FetchEntry {
  return {
    uid: Number(row.uid),
    modseq: Number(row.modseq),
    read: row.read === 1,
    flagged: row.flagged === 1,
    answered: row.answered === 1,
    deleted: row.deleted === 1,
    draft: false,
    labels: labelsOf(row.labels),
    id: row.id,
    size: Number(row.size),
    created_at: row.created_at,
    raw,
    structure,
  };
}

function inFolder(db: MailDb, scope: Scope) {
  return db
    .selectFrom('messages')
    .where('messages.workspace_id', '=', scope.workspaceId)
    .where('messages.mailbox_id', '=', scope.mailboxId)
    .where('messages.folder', '=', scope.folder);
}

/** The UID ranges as one condition (each a range scan of the folder's UID index). */
function inRanges(ranges: UidRanges) {
  return (eb: ExpressionBuilder<MailTables, 'messages'>) => eb.or(ranges.map(([from, to]) => eb.between('messages.uid', from, to)));
}

/** The columns FETCH reads of a message besides its bytes, in this order. */
const FETCH_COLUMNS = [...INDEX_COLUMNS, 'messages.id', 'messages.created_at'] as const;

/** What FETCH reads of the messages of UID ranges, in UID order (without the raw source or the structure). */
function byUid(db: MailDb, scope: Scope, ranges: UidRanges) {
  return inFolder(db, scope).select(FETCH_COLUMNS).where(inRanges(ranges)).orderBy('messages.uid');
}

function withRaw<O>(query: SelectQueryBuilder<MailTables, 'messages', O>) {
  return query
    .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
    .select('message_contents.raw');
}

/** Where each of FETCH_COLUMNS is in a binary COPY row of `byUid` (fields come in the select's order), the bytes last. */
const AT = Object.fromEntries(FETCH_COLUMNS.map((c, i) => [c.slice('messages.'.length), i])) as Record<(typeof FETCH_COLUMNS)[number] extends `messages.${infer C}` ? C : never, number>;
const BYTES_AT = FETCH_COLUMNS.length;

/** A FETCH entry from a binary COPY row of `byUid` with the raw source or the kept structure. */
function fetchEntryOfCopy(row: BinaryRow, read: 'raw' | 'structure'): FetchEntry {
  const bytes = row.isNull(BYTES_AT) ? null : row.bytes(BYTES_AT);
  return {
    uid: row.int(AT.uid),
    modseq: row.int(AT.modseq),
    read: row.int(AT.read) === 1,
    flagged: row.int(AT.flagged) === 1,
    answered: row.int(AT.answered) === 1,
    deleted: row.int(AT.deleted) === 1,
    draft: false,
    labels: labelsOf(row.text(AT.labels)),
    id: row.text(AT.id),
    size: row.int(AT.size),
    created_at: row.int(AT.created_at),
    // The raw source is NOT NULL and inner-joined: never null here.
    raw: read === 'raw' ? bytes! : undefined,
    structure: read === 'raw' ? undefined : unpackedStructure(bytes),
  };
}

/**
 * FETCH's reads of a few UID ranges (a client's one message, or a batch of `1:*`) as prepared statements: built and
 * compiled once per number of ranges, so a client that fetches one message a command (mbsync's pull) does not pay
 * for building the statement each time. More ranges are built per call (each count would be a shape kept).
 */
const PREPARED_RANGES = 4;
type ByUidParams = Scope & { from: number[]; to: number[] };
const byUidParams = (scope: Scope, ranges: UidRanges): ByUidParams => ({ ...scope, from: ranges.map((r) => r[0]), to: ranges.map((r) => r[1]) });
type ByUidRow = IndexRow & Pick<MessageTable, 'id' | 'created_at'>;
const preparedByUid = (db: MailDb, p: Param) => {
  const to = p.list<number>('to');
  const ranges = p.list<number>('from').map((from, i) => [from, to[i]!] as const);
  return byUid(db, { workspaceId: p<string>('workspaceId'), mailboxId: p<string>('mailboxId'), folder: p<string>('folder') }, ranges);
};
const byUidIndexQuery = preparedQuery<ByUidParams, ByUidRow, MailTables>((db, p) => preparedByUid(db, p));
const byUidStructureQuery = preparedQuery<ByUidParams, ByUidRow & { structure: Buffer | null }, MailTables>((db, p) => withStructure(preparedByUid(db, p)));
const byUidRawQuery = preparedQuery<ByUidParams, ByUidRow & { raw: Buffer }, MailTables>((db, p) => withRaw(preparedByUid(db, p)));
/**
 * The same reads with raw sources or kept structures on PostgreSQL, as binary COPY (db/pg-copy-binary.ts): the bytes
 * arrive as they are, where a query's rows would bring them encoded as text.
 */
const byUidRawCopy = preparedQuery<ByUidParams, BinaryRow, MailTables>((db, p) => copyBinary(db, withRaw(preparedByUid(db, p))));
const byUidStructureCopy = preparedQuery<ByUidParams, BinaryRow, MailTables>((db, p) => copyBinary(db, withStructure(preparedByUid(db, p))));

/** `messagesByUid`'s rows with bytes on PostgreSQL. */
async function copyByUid(db: MailDb, scope: Scope, ranges: UidRanges, read: 'raw' | 'structure'): Promise<FetchEntry[]> {
  let rows: BinaryRow[];
  if (ranges.length <= PREPARED_RANGES) {
    rows = await (read === 'raw' ? byUidRawCopy : byUidStructureCopy)(db, byUidParams(scope, ranges));
  } else {
    const base = byUid(db, scope, ranges);
    rows = await copyBinary(db, read === 'raw' ? withRaw(base) : withStructure(base)).execute();
  }
  return rows.map((r) => fetchEntryOfCopy(r, read));
}

const folderModseqQuery = preparedQuery<Scope, { modseq: number | string }, MailTables>((db, p) =>
  db
    .selectFrom('folder_counts')
    .select('modseq')
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('mailbox_id', '=', p<string>('mailboxId'))
    .where('folder', '=', p<string>('folder')),
);

function checkRanges(ranges: UidRanges): void {
  if (ranges.length > MAX_UID_RANGES) throw new RangeError(`at most ${MAX_UID_RANGES} UID ranges per call`);
}

/** The folder's counter row, made (with its UIDVALIDITY) if the folder has never held a message. */
async function counterRow(db: MailDb, scope: Scope) {
  const read = () =>
    db
      .selectFrom('folder_counts')
      .select(['uidvalidity', 'uidnext', 'modseq', 'total', 'unread'])
      .where('workspace_id', '=', scope.workspaceId)
      .where('mailbox_id', '=', scope.mailboxId)
      .where('folder', '=', scope.folder)
      .executeTakeFirst();
  const row = await read();
  if (row) return row;
  await bumpFolder(db, scope.workspaceId, scope.mailboxId, scope.folder, 0, 0, 0);
  return (await read())!;
}

/** The store's operations for mail clients (see the top of this file). */
export function createSyncStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  return {
    /** A folder's UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ (its modseq), counts and first unseen UID (three short statements at most). */
    async folderStatus(work: Work, scope: Scope): Promise<FolderStatus> {
      const db = mailDb(work);
      const row = await counterRow(db, scope);
      const unseen = await inFolder(db, scope).select((eb) => eb.fn.min('messages.uid').as('uid')).where('messages.read', '=', 0).executeTakeFirst();
      return {
        uidvalidity: Number(row.uidvalidity),
        uidnext: Number(row.uidnext),
        highestmodseq: Number(row.modseq),
        total: Number(row.total),
        unseen: Number(row.unread),
        firstUnseenUid: unseen?.uid == null ? null : Number(unseen.uid),
      };
    },

    /**
     * The folder's modseq (its counter row's; null before its first message): every change to the folder raises it,
     * so an IDLE session's safety poll reads this one row and looks further only when it moved.
     */
    async folderModseq(work: Work, scope: Scope): Promise<number | null> {
      const rows = await folderModseqQuery(mailDb(work), scope);
      return rows[0] === undefined ? null : Number(rows[0].modseq);
    },

    /** Every message of the folder as (uid, modseq, flags, labels), in UID order: one statement over narrow columns. */
    async folderIndex(work: Work, scope: Scope): Promise<IndexEntry[]> {
      const rows = await inFolder(mailDb(work), scope).select(INDEX_COLUMNS).orderBy('messages.uid').execute();
      return rows.map(toEntry);
    },

    /**
     * The messages of UID ranges with what FETCH reads, in UID order: with `raw` their raw source, with `structure`
     * their kept structure (null where none is kept yet: the caller computes it, `saveStructures`).
     */
    async messagesByUid(work: Work, scope: Scope, ranges: UidRanges, read: FetchRead = 'index'): Promise<FetchEntry[]> {
      checkRanges(ranges);
      if (ranges.length === 0) return [];
      const db = mailDb(work);
      if (read !== 'index' && dialect.binaryCopy) return copyByUid(db, scope, ranges, read);
      if (ranges.length <= PREPARED_RANGES) {
        const params = byUidParams(scope, ranges);
        if (read === 'index') return (await byUidIndexQuery(db, params)).map((r) => fetchEntryOf(r, undefined, undefined));
        if (read === 'structure') return (await byUidStructureQuery(db, params)).map((r) => fetchEntryOf(r, undefined, unpackedStructure(r.structure)));
        return (await byUidRawQuery(db, params)).map((r) => fetchEntryOf(r, r.raw, undefined));
      }
      const base = byUid(db, scope, ranges);
      if (read === 'index') return (await base.execute()).map((r) => fetchEntryOf(r, undefined, undefined));
      if (read === 'structure') return (await withStructure(base).execute()).map((r) => fetchEntryOf(r, undefined, unpackedStructure(r.structure)));
      return (await withRaw(base).execute()).map((r) => fetchEntryOf(r, r.raw, undefined));
    },

    /** The stored header fields (name, value as received) of the messages of UID ranges, in UID order (SEARCH HEADER). */
    async headersByUid(work: Work, scope: Scope, ranges: UidRanges): Promise<Array<{ uid: number; headers: Array<{ name: string; value: string }> }>> {
      checkRanges(ranges);
      if (ranges.length === 0) return [];
      const rows = await inFolder(mailDb(work), scope)
        .where(inRanges(ranges))
        .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
        .select(['messages.uid', 'message_contents.headers_json'])
        .orderBy('messages.uid')
        .execute();
      return rows.map((r) => ({ uid: Number(r.uid), headers: JSON.parse(r.headers_json) as Array<{ name: string; value: string }> }));
    },

    /** The folder's messages changed after `modseq` (CHANGEDSINCE), in UID order; optionally only within UID ranges. */
    async changedSince(work: Work, scope: Scope, modseq: number, ranges?: UidRanges): Promise<IndexEntry[]> {
      let query = inFolder(mailDb(work), scope).select(INDEX_COLUMNS).where('messages.modseq', '>', modseq);
      if (ranges) {
        checkRanges(ranges);
        if (ranges.length === 0) return [];
        query = query.where(inRanges(ranges));
      }
      return (await query.orderBy('messages.uid').execute()).map(toEntry);
    },

    /**
     * UIDs removed from the folder after `modseq` (VANISHED), ascending, as far as the expunge log still reaches
     * (`trimExpunged`); older removals a client learns from the UIDs it knows and no longer sees.
     */
    async expungedSince(work: Work, scope: Scope, modseq: number): Promise<number[]> {
      const rows = await mailDb(work)
        .selectFrom('mail_expunged')
        .select('uid')
        .where('workspace_id', '=', scope.workspaceId)
        .where('mailbox_id', '=', scope.mailboxId)
        .where('folder', '=', scope.folder)
        .where('modseq', '>', modseq)
        .orderBy('uid')
        .execute();
      return rows.map((r) => Number(r.uid));
    },

    /** Messages of the mailbox with this Message-ID (an APPEND of a message already stored), with their folder and UID. */
    async findByMessageId(work: Work, scope: Omit<Scope, 'folder'>, messageId: string): Promise<Array<{ id: string; folder: string; uid: number; size: number }>> {
      const rows = await mailDb(work)
        .selectFrom('thread_refs')
        .innerJoin('messages', 'messages.thread_id', 'thread_refs.thread_id')
        .select(['messages.id', 'messages.folder', 'messages.uid', 'messages.size'])
        .where('thread_refs.workspace_id', '=', scope.workspaceId)
        .where('thread_refs.mailbox_id', '=', scope.mailboxId)
        .where('thread_refs.message_key', '=', messageId)
        .where('messages.workspace_id', '=', scope.workspaceId)
        .where('messages.mailbox_id', '=', scope.mailboxId)
        .where('messages.internet_message_id', '=', messageId)
        .orderBy('messages.folder')
        .orderBy('messages.uid')
        .execute();
      return rows.map((r) => ({ ...r, uid: Number(r.uid) }));
    },

    /**
     * STORE flags and keywords on the messages of UID ranges, in the caller's transaction, leaving out those whose
     * modseq is above `unchangedSince`. Lock order: the message rows, their threads (read counts, labels), the
     * folder's counter; the changed messages then take the folder's new modseq.
     */
    async storeFlags(work: Work, scope: Scope, ranges: UidRanges, change: FlagStore): Promise<FlagStoreResult> {
      checkRanges(ranges);
      const db = mailDb(work);
      let query = inFolder(db, scope).select([...INDEX_COLUMNS, 'messages.id', 'messages.thread_id']).where(inRanges(ranges)).orderBy('messages.uid');
      if (dialect.supportsRowLocks) query = query.forUpdate();
      const rows = ranges.length === 0 ? [] : await query.execute();
      const guard = change.unchangedSince;
      const failed = guard === undefined ? [] : rows.filter((r) => Number(r.modseq) > guard).map((r) => Number(r.uid));
      const changes = rows.filter((r) => guard === undefined || Number(r.modseq) <= guard).map((r) => ({ row: r, next: applyStore(r, change) })).filter((c) => c.next !== null);
      if (changes.length === 0) return { modified: [], failed };
      await writeFlagChanges(db, clock, scope, changes as FlagChangeRow[]);
      const modseq = await currentModseq(db, scope);
      return { modified: changes.map((c) => ({ uid: Number(c.row.uid), modseq })), failed };
    },

    /**
     * EXPUNGE: remove the folder's messages marked \Deleted (within UID ranges, if given) through the one delete path,
     * which logs their UIDs. Returns the removed messages.
     */
    async expungeDeleted(work: Work, scope: Scope, ranges?: UidRanges): Promise<RemovedMessage[]> {
      const db = mailDb(work);
      let query = inFolder(db, scope).select('messages.id').where('messages.deleted', '=', 1);
      if (ranges) {
        checkRanges(ranges);
        if (ranges.length === 0) return [];
        query = query.where(inRanges(ranges));
      }
      const ids = (await query.execute()).map((r) => r.id);
      return removeMessages(db, { clock, dialect }, scope.workspaceId, ids, (eb) => eb.and([eb('messages.deleted', '=', 1), eb('messages.folder', '=', scope.folder)]));
    },

    /** Remove the folder's messages of UID ranges through the one delete path (a MOVE into IMAP's Drafts), in the caller's transaction; their UIDs. */
    async removeByUid(work: Work, scope: Scope, ranges: UidRanges): Promise<number[]> {
      checkRanges(ranges);
      if (ranges.length === 0) return [];
      const db = mailDb(work);
      const ids = (await inFolder(db, scope).select('messages.id').where(inRanges(ranges)).execute()).map((r) => r.id);
      const removed = await removeMessages(db, { clock, dialect }, scope.workspaceId, ids, (eb) => eb('messages.folder', '=', scope.folder));
      return removed.map((r) => Number(r.uid)).sort((a, b) => a - b);
    },

    /** Drop expunge-log rows older than `before` (housekeeping), up to `limit`; the number dropped. */
    async trimExpunged(work: Work, before: number, limit: number): Promise<number> {
      const db = mailDb(work);
      const batch = db.selectFrom('mail_expunged').select('expunged_at').where('expunged_at', '<', before).orderBy('expunged_at').limit(1).offset(limit - 1);
      // Up to the `limit`-th oldest row's time (all when fewer): one range delete on the age index.
      const last = await batch.executeTakeFirst();
      const result = await db
        .deleteFrom('mail_expunged')
        .where('expunged_at', '<', before)
        .where('expunged_at', '<=', last ? last.expunged_at : before)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

type StoreRow = IndexRow & { id: string; thread_id: string };
/** A message's flag columns and labels after a STORE. */
export interface NextState {
  read: number;
  flagged: number;
  answered: number;
  deleted: number;
  labels: string[];
}
type FlagChangeRow = { row: StoreRow; next: NextState };

const FLAG_NAMES = ['read', 'flagged', 'answered', 'deleted'] as const;

/** The row's state after the STORE, or null when nothing changes. */
export function applyStore(row: Omit<IndexRow, 'uid' | 'modseq'>, change: FlagStore): NextState | null {
  const labels = JSON.parse(row.labels) as string[];
  const next: NextState = { read: row.read, flagged: row.flagged, answered: row.answered, deleted: row.deleted, labels };
  for (const name of FLAG_NAMES) {
    const given = change.flags[name];
    if (change.mode === 'set') next[name] = given ? 1 : 0;
    else if (given) next[name] = change.mode === 'add' ? 1 : 0;
  }
  if (change.mode === 'set') next.labels = [...new Set(change.keywords)].sort();
  else if (change.mode === 'add') next.labels = [...new Set([...labels, ...change.keywords])].sort();
  else next.labels = labels.filter((l) => !change.keywords.includes(l));
  const same = FLAG_NAMES.every((n) => next[n] === row[n]) && JSON.stringify(next.labels) === JSON.stringify(labels);
  return same ? null : next;
}

/**
 * Write the changed rows: one UPDATE per distinct resulting state (a STORE over many messages gives few), the
 * keyword rows, the threads' unread counts and labels (threads in id order), then the folder's counter and the
 * rows' modseq.
 */
async function writeFlagChanges(db: MailDb, clock: Clock, scope: Scope, changes: readonly FlagChangeRow[]): Promise<void> {
  const now = clock.now();
  const byState = new Map<string, { next: NextState; ids: string[] }>();
  for (const { row, next } of changes) {
    const key = JSON.stringify(next);
    const group = byState.get(key) ?? { next, ids: [] };
    group.ids.push(row.id);
    byState.set(key, group);
  }
  for (const { next, ids } of byState.values()) {
    const { labels, ...flags } = next;
    await db.updateTable('messages').set({ ...flags, labels: JSON.stringify(labels), updated_at: now }).where('workspace_id', '=', scope.workspaceId).where('id', 'in', ids).execute();
  }
  const unreadByThread = new Map<string, number>();
  const relabelled = new Set<string>();
  let unread = 0;
  for (const { row, next } of changes) {
    const delta = (next.read === 1 ? 0 : 1) - (row.read === 1 ? 0 : 1);
    unread += delta;
    if (delta !== 0) unreadByThread.set(row.thread_id, (unreadByThread.get(row.thread_id) ?? 0) + delta);
    const before = JSON.parse(row.labels) as string[];
    if (JSON.stringify(before) === JSON.stringify(next.labels)) continue;
    relabelled.add(row.thread_id);
    const removed = before.filter((l) => !next.labels.includes(l));
    if (removed.length > 0) await db.deleteFrom('message_labels').where('workspace_id', '=', scope.workspaceId).where('message_id', '=', row.id).where('label', 'in', removed).execute();
    await insertLabels(db, scope.workspaceId, row.id, next.labels.filter((l) => !before.includes(l)));
  }
  for (const threadId of [...new Set([...unreadByThread.keys(), ...relabelled])].sort()) await settleThread(db, now, scope.workspaceId, threadId, unreadByThread.get(threadId) ?? 0, relabelled.has(threadId));
  await bumpFolder(db, scope.workspaceId, scope.mailboxId, scope.folder, 0, unread, 0);
  await stampModseq(db, scope.workspaceId, changes.map((c) => c.row.id));
}

/** A thread after a STORE: its unread count moved by `delta`, its labels (the union of its messages') again if they changed. */
async function settleThread(db: MailDb, now: number, workspaceId: string, threadId: string, delta: number, relabel: boolean): Promise<void> {
  const set: Record<string, unknown> = { updated_at: now };
  if (delta !== 0) set.unread_count = sql<number>`${sql.ref('unread_count')} + ${delta}`;
  if (relabel) {
    set.labels = JSON.stringify(await threadLabels(db, workspaceId, threadId));
  }
  await db.updateTable('threads').set(set).where('workspace_id', '=', workspaceId).where('id', '=', threadId).execute();
}

async function currentModseq(db: MailDb, scope: Scope): Promise<number> {
  const row = await db.selectFrom('folder_counts').select('modseq').where('mailbox_id', '=', scope.mailboxId).where('folder', '=', scope.folder).where('workspace_id', '=', scope.workspaceId).executeTakeFirstOrThrow();
  return Number(row.modseq);
}
