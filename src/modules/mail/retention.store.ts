/**
 * Retention of the `trash` and `spam` folders: each workspace's periods (`mail_retention`), and the sweep's two
 * steps, finding messages past their period and removing them through `removeMessages` (organize.store.ts), the one
 * delete path, so that threads, folder counters, modseq, labels, attachments, contents and the search index stay true.
 */
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { MailTables } from './mail.table.js';
import { mailDb } from './message.store.js';
import { removeMessages, type RemovedMessage } from './organize.store.js';
import type { DeliveryStatus } from './outbound.table.js';
import type { MailRetentionTable } from './retention.table.js';

/** The folders whose messages expire. */
export const RETENTION_FOLDERS = ['trash', 'spam'] as const;
export type RetentionFolder = (typeof RETENTION_FOLDERS)[number];

/** A workspace's own periods in days: null = the operator's default, 0 = never. */
export type RetentionSettings = Pick<MailRetentionTable, 'trash_days' | 'spam_days'>;

/** Delivery states after which the message may still be sent: such a message is kept whatever its folder. */
const MOVING: readonly DeliveryStatus[] = ['scheduled', 'queued', 'processing'];

const daysColumn = (folder: RetentionFolder) => (folder === 'trash' ? 'mail_retention.trash_days' : 'mail_retention.spam_days');

/** The messages of one period's workspaces: `days` theirs, whether set by them or the default. */
export interface PeriodGroup {
  folder: RetentionFolder;
  /** The period, in days (never 0). */
  days: number;
  /** The operator's default for the folder (0 = never): workspaces without a period of their own have it. */
  defaultDays: number;
}

/** A message the sweep found past its period, and where the walk goes on from. */
export interface ExpiredMessage {
  id: string;
  workspace_id: string;
  updated_at: number;
}

/** The workspace's effective period for the message's folder is the group's. */
function inGroup(eb: ExpressionBuilder<MailTables, 'messages'>, group: PeriodGroup): Expression<SqlBool> {
  const own = eb.selectFrom('mail_retention').select(sql<number>`1`.as('one')).whereRef('mail_retention.workspace_id', '=', 'messages.workspace_id');
  if (group.days === group.defaultDays) return eb.not(eb.exists(own.where(daysColumn(group.folder), 'is not', null).where(daysColumn(group.folder), '<>', group.days)));
  return eb.exists(own.where(daysColumn(group.folder), '=', group.days));
}

/**
 * Nothing still needs the message: no delivery of it may still start (scheduled, queued, under way) and no draft
 * answers it (sending the draft reads the message's headers).
 */
function notNeeded(eb: ExpressionBuilder<MailTables, 'messages'>): Expression<SqlBool> {
  return eb.and([
    eb.not(
      eb.exists(
        eb.selectFrom('outbound').select(sql<number>`1`.as('one')).whereRef('outbound.message_id', '=', 'messages.id').where('outbound.status', 'in', MOVING),
      ),
    ),
    eb.not(
      eb.exists(
        eb
          .selectFrom('drafts')
          .select(sql<number>`1`.as('one'))
          .whereRef('drafts.workspace_id', '=', 'messages.workspace_id')
          .whereRef('drafts.in_reply_to', '=', 'messages.id'),
      ),
    ),
  ]);
}

/**
 * Past its period: in the folder (a literal, so that both databases take the folder's partial index, a prepared
 * statement's generic plan included), last changed before `cutoff`, and not needed.
 */
const expired = (folder: RetentionFolder, cutoff: number) => (eb: ExpressionBuilder<MailTables, 'messages'>) =>
  eb.and([eb('messages.folder', '=', sql.lit(folder)), eb('messages.updated_at', '<', cutoff), notNeeded(eb)]);

export function createRetentionStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  return {
    /** The workspace's own periods; undefined when it has none (the operator's defaults apply). */
    retentionSettings: (work: Work, workspaceId: string): Promise<RetentionSettings | undefined> =>
      mailDb(work).selectFrom('mail_retention').select(['trash_days', 'spam_days']).where('workspace_id', '=', workspaceId).executeTakeFirst(),

    /** Set the workspace's periods (the fields given; the others stay). */
    async saveRetentionSettings(work: Work, workspaceId: string, change: Partial<RetentionSettings>): Promise<void> {
      const now = clock.now();
      await mailDb(work)
        .insertInto('mail_retention')
        .values({ workspace_id: workspaceId, trash_days: change.trash_days ?? null, spam_days: change.spam_days ?? null, updated_at: now })
        .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ ...change, updated_at: now }))
        .execute();
    },

    /** The periods workspaces chose for a folder other than never (each once). */
    async retentionPeriods(work: Work, folder: RetentionFolder): Promise<number[]> {
      const rows = await mailDb(work).selectFrom('mail_retention').select(['trash_days', 'spam_days']).where(daysColumn(folder), '>', 0).execute();
      return [...new Set(rows.map((r) => Number(folder === 'trash' ? r.trash_days : r.spam_days)))];
    },

    /**
     * Up to `limit` messages of the group's workspaces past its period (`cutoff`), oldest change first, after
     * `after` (the last one of the previous call): a walk of the folder's index that passes each kept message once.
     */
    expiredMessages(work: Work, group: PeriodGroup, cutoff: number, after: ExpiredMessage | null, limit: number): Promise<ExpiredMessage[]> {
      let query = mailDb(work)
        .selectFrom('messages')
        .select(['messages.id', 'messages.workspace_id', 'messages.updated_at'])
        .where(expired(group.folder, cutoff))
        .where((eb) => inGroup(eb, group));
      if (after) {
        query = query.where((eb) => eb.or([eb('messages.updated_at', '>', after.updated_at), eb.and([eb('messages.updated_at', '=', after.updated_at), eb('messages.id', '>', after.id)])]));
      }
      return query.orderBy('messages.updated_at').orderBy('messages.id').limit(limit).execute();
    },

    /**
     * In the caller's transaction, remove those of `ids` (one workspace's) that are still past `cutoff` in the
     * folder and not needed, through the one delete path. PostgreSQL: the rows are first locked SKIP LOCKED, so
     * sweeps in several processes take disjoint rows and never wait on each other or on a user's change.
     */
    async sweepMessages(work: Work, workspaceId: string, ids: readonly string[], folder: RetentionFolder, cutoff: number): Promise<RemovedMessage[]> {
      const db = mailDb(work);
      let take = ids;
      if (dialect.supportsSkipLocked && ids.length > 0) {
        const free = await db
          .selectFrom('messages')
          .select('messages.id')
          .where('messages.workspace_id', '=', workspaceId)
          .where('messages.id', 'in', ids)
          .where(expired(folder, cutoff))
          .orderBy('messages.id')
          .forUpdate()
          .skipLocked()
          .execute();
        take = free.map((r) => r.id);
      }
      return removeMessages(db, { clock, dialect }, workspaceId, take, expired(folder, cutoff));
    },
  };
}
