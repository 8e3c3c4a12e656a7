/**
 * The quotas module's tables: the operator's settings per workspace, and messages sent per workspace and clock
 * hour. Every operation takes the pool or the caller's transaction first.
 */
import { sql } from 'kysely';
import { preparedQuery, preparedWrite } from '../../db/prepared.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { QuotaTables } from './quota.table.js';

const of = (work: Work) => tablesOf<QuotaTables>(work);

/** Count sends without reading the count back (no send quota applies): a deferred write, joined to the next statement. */
const countSendsQuery = preparedWrite<{ workspaceId: string; windowStart: number; sent: number }, QuotaTables>((db, p) =>
  db
    .insertInto('quota_send_counts')
    .values({ workspace_id: p('workspaceId'), window_start: p('windowStart'), sent: p('sent') })
    .onConflict((oc) => oc.columns(['workspace_id', 'window_start']).doUpdateSet({ sent: sql<number>`${sql.ref('quota_send_counts.sent')} + ${p<number>('sent')}` })),
);

/**
 * The same, reading back the hour's count and the sum of the earlier hours of the day (a send quota applies): one
 * statement, as it runs in every such send. The earlier windows are other rows, closed, so which snapshot the
 * subquery reads does not matter.
 */
const countSendsReturningQuery = preparedQuery<{ workspaceId: string; windowStart: number; sent: number; since: number }, { sent: number; earlier: number | string | null }, QuotaTables>((db, p) =>
  db
    .insertInto('quota_send_counts')
    .values({ workspace_id: p('workspaceId'), window_start: p('windowStart'), sent: p('sent') })
    .onConflict((oc) => oc.columns(['workspace_id', 'window_start']).doUpdateSet({ sent: sql<number>`${sql.ref('quota_send_counts.sent')} + ${p<number>('sent')}` }))
    .returning((eb) => [
      'sent',
      eb
        .selectFrom('quota_send_counts as day')
        .select((e) => e.fn.sum<number | string | null>('day.sent').as('total'))
        .where('day.workspace_id', '=', p<string>('workspaceId'))
        .where('day.window_start', '>=', p<number>('since'))
        .where('day.window_start', '<', p<number>('windowStart'))
        .as('earlier'),
    ]),
);

const sendWindowsQuery = preparedQuery<{ workspaceId: string; since: number }, { window_start: number | string; sent: number }, QuotaTables>((db, p) =>
  db
    .selectFrom('quota_send_counts')
    .select(['window_start', 'sent'])
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('window_start', '>=', p<number>('since'))
    .orderBy('window_start'),
);

export function createQuotaStore() {
  return {
    /** The workspace's own settings (quotas without a row take the defaults). */
    settings: (work: Work, workspaceId: string) => of(work).selectFrom('workspace_quotas').select(['name', 'value']).where('workspace_id', '=', workspaceId).execute(),

    async setSetting(work: Work, row: { workspaceId: string; name: string; value: number | null; now: number }): Promise<void> {
      await of(work)
        .insertInto('workspace_quotas')
        .values({ workspace_id: row.workspaceId, name: row.name, value: row.value, updated_at: row.now })
        .onConflict((oc) => oc.columns(['workspace_id', 'name']).doUpdateSet({ value: row.value, updated_at: row.now }))
        .execute();
    },

    async clearSetting(work: Work, workspaceId: string, name: string): Promise<void> {
      await of(work).deleteFrom('workspace_quotas').where('workspace_id', '=', workspaceId).where('name', '=', name).execute();
    },

    /** Add `sent` to the hour's count, in the caller's transaction, reading nothing back. */
    countSends: (work: Work, workspaceId: string, windowStart: number, sent: number): Promise<void> => countSendsQuery(of(work), { workspaceId, windowStart, sent }),

    /**
     * Add `sent` to the hour's count in one statement and return the count now, with the sum of the windows from
     * `since` up to this hour: on PostgreSQL the hour's row stays locked until the caller's transaction ends, so
     * concurrent sends of the workspace count one after another.
     */
    async countSendsReturning(work: Work, workspaceId: string, windowStart: number, sent: number, since: number): Promise<{ hour: number; earlier: number }> {
      const rows = await countSendsReturningQuery(of(work), { workspaceId, windowStart, sent, since });
      return { hour: Number(rows[0]!.sent), earlier: Number(rows[0]!.earlier ?? 0) };
    },

    /** The hour windows of the workspace from `since` on, oldest first. */
    async sendWindows(work: Work, workspaceId: string, since: number): Promise<Array<{ windowStart: number; sent: number }>> {
      const rows = await sendWindowsQuery(of(work), { workspaceId, since });
      return rows.map((r) => ({ windowStart: Number(r.window_start), sent: Number(r.sent) }));
    },

    /** Forget the windows that ended before `before`, at most `limit` rows (a bounded batch); how many went. */
    async deleteSendCountsBefore(work: Work, before: number, limit: number): Promise<number> {
      const db = of(work);
      const doomed = db.selectFrom('quota_send_counts').select('workspace_id').where('window_start', '<', before).limit(limit);
      const result = await db
        .deleteFrom('quota_send_counts')
        .where('window_start', '<', before)
        .where('workspace_id', 'in', doomed)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type QuotaStore = ReturnType<typeof createQuotaStore>;
