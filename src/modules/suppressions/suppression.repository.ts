import type { Db } from '../../db/database.js';
import { insertRows, preparedQuery } from '../../db/prepared.js';
import type { SuppressionReason, SuppressionTable } from '../mail/suppression.table.js';

/** A send's suppression check: which of its recipients the workspace suppresses (prepared: see db/prepared.ts). */
const amongQuery = preparedQuery<{ workspaceId: string; addresses: readonly string[] }, { address: string }>((db, p) =>
  db.selectFrom('suppressions').select('address').where('workspace_id', '=', p<string>('workspaceId')).where('address', 'in', p.list<string>('addresses')),
);

/** Suppression queries; every one filters by workspace. */
export const suppressionRepository = {
  /**
   * Add rows; an address already suppressed keeps its first row (its first cause). Safe to run again, as the
   * group-committed units that call it must be.
   */
  insert: (db: Db, rows: readonly SuppressionTable[]) => insertRows(db, 'suppressions', rows, { ignoreConflicts: true }),
  /** One row, unless the address is suppressed already: whether it was added. */
  insertOne: async (db: Db, row: SuppressionTable): Promise<boolean> => {
    const result = await db.insertInto('suppressions').values(row).onConflict((oc) => oc.columns(['workspace_id', 'address']).doNothing()).executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  },
  /** The given (lower-case) addresses that are suppressed. */
  among: async (db: Db, workspaceId: string, addresses: readonly string[]): Promise<Set<string>> => {
    if (addresses.length === 0) return new Set();
    return new Set((await amongQuery(db, { workspaceId, addresses })).map((r) => r.address));
  },
  list: (db: Db, workspaceId: string, reason: SuppressionReason | undefined, limit: number, offset: number) => {
    let query = db.selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId);
    if (reason) query = query.where('reason', '=', reason);
    return query.orderBy('created_at', 'desc').orderBy('address', 'asc').limit(limit).offset(offset).execute();
  },
  count: async (db: Db, workspaceId: string, reason: SuppressionReason | undefined) => {
    let query = db.selectFrom('suppressions').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId);
    if (reason) query = query.where('reason', '=', reason);
    return Number((await query.executeTakeFirstOrThrow()).n);
  },
  find: (db: Db, workspaceId: string, address: string) => db.selectFrom('suppressions').selectAll().where('workspace_id', '=', workspaceId).where('address', '=', address).executeTakeFirst(),
  delete: (db: Db, workspaceId: string, address: string) => db.deleteFrom('suppressions').where('workspace_id', '=', workspaceId).where('address', '=', address).execute(),
} as const;
