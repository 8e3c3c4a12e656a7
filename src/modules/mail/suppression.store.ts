import { insertRows, preparedQuery } from '../../db/prepared.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { MailTables } from './mail.table.js';
import type { SuppressionReason, SuppressionTable } from './suppression.table.js';

/** A send's suppression check: which of its recipients the workspace suppresses (prepared: see db/prepared.ts). */
const amongQuery = preparedQuery<{ workspaceId: string; addresses: readonly string[] }, { address: string }, MailTables>((db, p) =>
  db.selectFrom('suppressions').select('address').where('workspace_id', '=', p<string>('workspaceId')).where('address', 'in', p.list<string>('addresses')),
);

/** The addresses each workspace no longer sends to; every operation filters by workspace. */
export interface SuppressionStore {
  /**
   * Suppress addresses; an address already suppressed keeps its first row (its first cause). Safe to run again, as
   * the group-committed units that call it must be.
   */
  suppress(work: Work, rows: readonly SuppressionTable[]): Promise<void>;
  /** Suppress one address, unless it is already: whether it was added. */
  suppressOne(work: Work, row: SuppressionTable): Promise<boolean>;
  /** The given (lower-case) addresses that are suppressed. */
  suppressedAmong(work: Work, workspaceId: string, addresses: readonly string[]): Promise<Set<string>>;
  /** Newest first, then by address. */
  listSuppressions(work: Work, workspaceId: string, reason: SuppressionReason | undefined, limit: number, offset: number): Promise<SuppressionTable[]>;
  countSuppressions(work: Work, workspaceId: string, reason: SuppressionReason | undefined): Promise<number>;
  findSuppression(work: Work, workspaceId: string, address: string): Promise<SuppressionTable | undefined>;
  /** The address may be sent to again. */
  unsuppress(work: Work, workspaceId: string, address: string): Promise<void>;
}

export function createSuppressionStore(): SuppressionStore {
  return {
    suppress: (work, rows) => insertRows(tablesOf<MailTables>(work), 'suppressions', rows, { ignoreConflicts: true }),
    async suppressOne(work, row) {
      const db = tablesOf<MailTables>(work);
      const result = await db.insertInto('suppressions').values(row).onConflict((oc) => oc.columns(['workspace_id', 'address']).doNothing()).executeTakeFirst();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
    async suppressedAmong(work, workspaceId, addresses) {
      if (addresses.length === 0) return new Set();
      return new Set((await amongQuery(tablesOf<MailTables>(work), { workspaceId, addresses })).map((r) => r.address));
    },
    listSuppressions(work, workspaceId, reason, limit, offset) {
      let query = tablesOf<MailTables>(work).selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId);
      if (reason) query = query.where('reason', '=', reason);
      return query.orderBy('created_at', 'desc').orderBy('address', 'asc').limit(limit).offset(offset).execute();
    },
    async countSuppressions(work, workspaceId, reason) {
      let query = tablesOf<MailTables>(work)
        .selectFrom('suppressions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId);
      if (reason) query = query.where('reason', '=', reason);
      return Number((await query.executeTakeFirstOrThrow()).n);
    },
    findSuppression: (work, workspaceId, address) =>
      tablesOf<MailTables>(work).selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId).where('address', '=', address).executeTakeFirst(),
    async unsuppress(work, workspaceId, address) {
      await tablesOf<MailTables>(work).deleteFrom('suppressions').where('workspace_id', '=', workspaceId).where('address', '=', address).execute();
    },
  };
}
