/**
 * Drafts as IMAP's Drafts mailbox shows them: each draft with a MIME source (`raw`) has a UID from the mailbox's
 * 'drafts' folder counter (the `folder_counts` row every folder has: UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ, the
 * "mailbox changed" signal), a modseq and IMAP flags. A draft's content never changes under its UID: a new source
 * takes a new UID and logs the old one as expunged. The counter row's `total` and `unread` stay 0 (drafts are not
 * messages: mailbox counts, stats and page totals sum those); its `bytes` are the drafts' sources, which the
 * workspace's stored bytes include. Every statement filters by workspace and mailbox.
 */
import type { ExpressionBuilder } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { DraftTable } from './draft.table.js';
import type { MailTables } from './mail.table.js';
import { bumpFolder, DRAFTS_FOLDER, mailDb, type MailDb } from './message.store.js';
import { logExpunged } from './organize.store.js';
import { applyStore, MAX_UID_RANGES, toEntry, type FetchEntry, type FetchRead, type FlagStore, type FlagStoreResult, type FolderStatus, type IndexEntry, type UidRanges } from './sync.store.js';

/** One mailbox's Drafts. */
export interface DraftScope {
  workspaceId: string;
  mailboxId: string;
}

/** A draft's IMAP flags and keywords as a client gives them. */
export interface DraftFlagValues {
  read: boolean;
  flagged: boolean;
  answered: boolean;
  deleted: boolean;
  labels: readonly string[];
}

/** A draft as `removeDrafts` needs it. */
type RemovedDraft = Pick<DraftTable, 'id' | 'mailbox_id' | 'uid' | 'size'>;

const INDEX_COLUMNS = ['drafts.uid', 'drafts.modseq', 'drafts.read', 'drafts.flagged', 'drafts.answered', 'drafts.deleted', 'drafts.labels', 'drafts.size'] as const;
type IndexRow = Pick<DraftTable, 'uid' | 'modseq' | 'read' | 'flagged' | 'answered' | 'deleted' | 'labels' | 'size'>;

/** \Draft is always set on a draft. */
const draftEntry = (row: IndexRow): IndexEntry => ({ ...toEntry({ ...row, uid: Number(row.uid) }), draft: true });

/** The scope's drafts that IMAP shows (those with a source and so a UID). */
function shown(db: MailDb, scope: DraftScope) {
  return db.selectFrom('drafts').where('drafts.workspace_id', '=', scope.workspaceId).where('drafts.mailbox_id', '=', scope.mailboxId).where('drafts.uid', 'is not', null);
}

function inRanges(ranges: UidRanges) {
  if (ranges.length > MAX_UID_RANGES) throw new RangeError(`at most ${MAX_UID_RANGES} UID ranges per call`);
  return (eb: ExpressionBuilder<MailTables, 'drafts'>) => eb.or(ranges.map(([from, to]) => eb.between('drafts.uid', from, to)));
}

async function counter(db: MailDb, scope: DraftScope) {
  return db
    .selectFrom('folder_counts')
    .select(['uidvalidity', 'uidnext', 'modseq'])
    .where('workspace_id', '=', scope.workspaceId)
    .where('mailbox_id', '=', scope.mailboxId)
    .where('folder', '=', DRAFTS_FOLDER)
    .executeTakeFirst();
}

/**
 * Remove drafts (in the caller's transaction) and take them out of Drafts: the counter's bytes lowered and modseq
 * raised, the UIDs they had logged as expunged (QRESYNC). Lock order: the draft rows, then the counter.
 */
export async function removeDrafts(db: MailDb, clock: Clock, workspaceId: string, ids: readonly string[]): Promise<RemovedDraft[]> {
  if (ids.length === 0) return [];
  const removed = await db.deleteFrom('drafts').where('workspace_id', '=', workspaceId).where('id', 'in', ids).returning(['id', 'mailbox_id', 'uid', 'size']).execute();
  const mailboxes = [...new Set(removed.filter((r) => r.uid !== null).map((r) => r.mailbox_id))].sort();
  for (const mailboxId of mailboxes) {
    const bytes = removed.filter((r) => r.mailbox_id === mailboxId).reduce((n, r) => n + r.size, 0);
    await bumpFolder(db, workspaceId, mailboxId, DRAFTS_FOLDER, 0, 0, -bytes);
  }
  const gone = removed.filter((r) => r.uid !== null).map((r) => ({ mailbox_id: r.mailbox_id, folder: DRAFTS_FOLDER, uid: Number(r.uid) }));
  await logExpunged(db, workspaceId, gone, clock.now());
  return removed;
}

/** The IMAP Drafts operations of the mail store (see the top of this file). */
export function createDraftFolderStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  return {
    /**
     * Give a draft a new MIME source and so a new UID (its old one, if any, logged as expunged), in the caller's
     * transaction; its flags and keywords stay unless `flags` are given. Returns the new UID, or null when the draft is gone.
     */
    async setDraftSource(work: Work, workspaceId: string, draftId: string, raw: Buffer, flags?: DraftFlagValues): Promise<number | null> {
      const db = mailDb(work);
      let query = db.selectFrom('drafts').select(['mailbox_id', 'uid', 'size']).where('workspace_id', '=', workspaceId).where('id', '=', draftId);
      if (dialect.supportsRowLocks) query = query.forUpdate();
      const row = await query.executeTakeFirst();
      if (!row) return null;
      await bumpFolder(db, workspaceId, row.mailbox_id, DRAFTS_FOLDER, 0, 0, raw.length - row.size, 1);
      // The counter row is locked by the bump until commit: the UID and modseq read here are this draft's own.
      const c = (await counter(db, { workspaceId, mailboxId: row.mailbox_id }))!;
      const uid = Number(c.uidnext) - 1;
      const given = flags === undefined ? {} : { read: +flags.read, flagged: +flags.flagged, answered: +flags.answered, deleted: +flags.deleted, labels: JSON.stringify([...new Set(flags.labels)].sort()) };
      await db.updateTable('drafts').set({ raw, size: raw.length, uid, modseq: Number(c.modseq), ...given }).where('workspace_id', '=', workspaceId).where('id', '=', draftId).execute();
      if (row.uid !== null) await logExpunged(db, workspaceId, [{ mailbox_id: row.mailbox_id, folder: DRAFTS_FOLDER, uid: Number(row.uid) }], clock.now());
      return uid;
    },

    /** A draft's UID in Drafts (null when it is gone or has no source). */
    async draftUid(work: Work, workspaceId: string, id: string): Promise<number | null> {
      const row = await mailDb(work).selectFrom('drafts').select('uid').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
      return row?.uid == null ? null : Number(row.uid);
    },

    /** Ids of the mailbox's drafts without a source (made before sources were kept), oldest first. */
    async draftsWithoutSource(work: Work, scope: DraftScope): Promise<string[]> {
      const rows = await mailDb(work)
        .selectFrom('drafts')
        .select('id')
        .where('workspace_id', '=', scope.workspaceId)
        .where('mailbox_id', '=', scope.mailboxId)
        .where('uid', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => r.id);
    },

    /** Drafts' UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ (the counter, made on first use) and counts (drafts are few). */
    async draftFolderStatus(work: Work, scope: DraftScope): Promise<FolderStatus> {
      const db = mailDb(work);
      let c = await counter(db, scope);
      if (!c) {
        await bumpFolder(db, scope.workspaceId, scope.mailboxId, DRAFTS_FOLDER, 0, 0, 0);
        c = (await counter(db, scope))!;
      }
      const counts = await shown(db, scope)
        .select((eb) => [eb.fn.countAll<number | string>().as('total'), eb.fn.min('drafts.uid').filterWhere('drafts.read', '=', 0).as('first')])
        .executeTakeFirstOrThrow();
      const unseen = await shown(db, scope).select((eb) => eb.fn.countAll<number | string>().as('n')).where('drafts.read', '=', 0).executeTakeFirstOrThrow();
      return {
        uidvalidity: Number(c.uidvalidity),
        uidnext: Number(c.uidnext),
        highestmodseq: Number(c.modseq),
        total: Number(counts.total),
        unseen: Number(unseen.n),
        firstUnseenUid: counts.first == null ? null : Number(counts.first),
      };
    },

    /** Every draft of Drafts as (uid, modseq, flags, keywords), in UID order. */
    async draftFolderIndex(work: Work, scope: DraftScope): Promise<IndexEntry[]> {
      return (await shown(mailDb(work), scope).select(INDEX_COLUMNS).orderBy('drafts.uid').execute()).map(draftEntry);
    },

    /** The drafts of UID ranges as FETCH reads them (`raw` for 'raw' and 'structure'), in UID order. */
    async draftsByUid(work: Work, scope: DraftScope, ranges: UidRanges, read: FetchRead = 'index'): Promise<FetchEntry[]> {
      if (ranges.length === 0) return [];
      const base = shown(mailDb(work), scope).select([...INDEX_COLUMNS, 'drafts.id', 'drafts.updated_at']).where(inRanges(ranges)).orderBy('drafts.uid');
      if (read === 'index') return (await base.execute()).map((r) => ({ ...draftEntry(r), id: r.id, created_at: r.updated_at }));
      const rows = await base.select('drafts.raw').execute();
      return rows.map((r) => ({ ...draftEntry(r), id: r.id, created_at: r.updated_at, raw: Buffer.from(r.raw!) }));
    },

    /** Drafts changed after `modseq` (CHANGEDSINCE), in UID order. */
    async draftsChangedSince(work: Work, scope: DraftScope, modseq: number): Promise<IndexEntry[]> {
      return (await shown(mailDb(work), scope).select(INDEX_COLUMNS).where('drafts.modseq', '>', modseq).orderBy('drafts.uid').execute()).map(draftEntry);
    },

    /** STORE on drafts (the messages' rules: `applyStore`), in the caller's transaction; changed drafts take the counter's new modseq. */
    async storeDraftFlags(work: Work, scope: DraftScope, ranges: UidRanges, change: FlagStore): Promise<FlagStoreResult> {
      if (ranges.length === 0) return { modified: [], failed: [] };
      const db = mailDb(work);
      let query = shown(db, scope).select([...INDEX_COLUMNS, 'drafts.id']).where(inRanges(ranges)).orderBy('drafts.uid');
      if (dialect.supportsRowLocks) query = query.forUpdate();
      const rows = await query.execute();
      const guard = change.unchangedSince;
      const failed = guard === undefined ? [] : rows.filter((r) => Number(r.modseq) > guard).map((r) => Number(r.uid));
      const changes = rows.filter((r) => guard === undefined || Number(r.modseq) <= guard).map((row) => ({ row, next: applyStore(row, change) }));
      const changed = changes.filter((c) => c.next !== null);
      if (changed.length === 0) return { modified: [], failed };
      await bumpFolder(db, scope.workspaceId, scope.mailboxId, DRAFTS_FOLDER, 0, 0, 0);
      const modseq = Number((await counter(db, scope))!.modseq);
      // Not `updated_at`: it is the draft's INTERNALDATE, which a flag change leaves as it is.
      for (const { row, next } of changed) {
        const { labels, ...flags } = next!;
        await db.updateTable('drafts').set({ ...flags, labels: JSON.stringify(labels), modseq }).where('workspace_id', '=', scope.workspaceId).where('id', '=', row.id).execute();
      }
      return { modified: changed.map((c) => ({ uid: Number(c.row.uid), modseq })), failed };
    },

    /** Remove drafts of UID ranges (all marked \Deleted with `deletedOnly`), in the caller's transaction; their UIDs. */
    async removeDraftsByUid(work: Work, scope: DraftScope, ranges: UidRanges | undefined, deletedOnly: boolean): Promise<number[]> {
      const db = mailDb(work);
      let query = shown(db, scope).select('drafts.id');
      if (deletedOnly) query = query.where('drafts.deleted', '=', 1);
      if (ranges !== undefined) {
        if (ranges.length === 0) return [];
        query = query.where(inRanges(ranges));
      }
      const ids = (await query.execute()).map((r) => r.id);
      const removed = await removeDrafts(db, clock, scope.workspaceId, ids);
      return removed.map((r) => Number(r.uid)).sort((a, b) => a - b);
    },
  };
}
