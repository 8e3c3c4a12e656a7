import type { Kysely, OperandExpression } from 'kysely';

/** Any table with a workspace_id, as the batch delete below reads it (its own columns are the caller's concern). */
type AnyTables = Record<string, { workspace_id: string } & Record<string, string>>;

/**
 * Where a batch is chosen when the table has no index led by workspace_id: the rows whose `column` (which an index
 * leads) is among `ids`, the workspace's parent rows (a webhook's deliveries by webhook, a mailbox's counters by
 * mailbox). Without it, by workspace_id.
 */
export interface BatchVia<Column extends string> {
  column: Column;
  ids: OperandExpression<string>;
}

/**
 * Delete up to `limit` rows of one workspace from `table` in one statement (its own short transaction on the pool):
 * the rows whose `key` is among the first `limit` keys of the workspace's rows. `key` need be unique only within
 * the workspace: a key shared by two of its rows deletes both, which a purge of the whole workspace wants anyway.
 * Rows that hang off these by a cascading foreign key go with them. The number deleted; 0 once none is left.
 *
 * A store calls it with its own handle (`Kysely<ItsTables>`), so `table` is checked to be one of its own.
 */
export async function deleteWorkspaceBatch<DB, T extends keyof DB & string>(
  db: Kysely<DB>,
  table: T,
  key: keyof DB[T] & string,
  workspaceId: string,
  limit: number,
  via?: BatchVia<keyof DB[T] & string>,
): Promise<number> {
  const loose = db as unknown as Kysely<AnyTables>;
  // Past the signature's check, the table is any table with a workspace_id.
  const name: string = table;
  const keyColumn: string = key;
  const parent = via && { column: String(via.column), ids: via.ids };
  const rows = loose.selectFrom(name).select(keyColumn);
  const batch = (parent ? rows.where(parent.column, 'in', parent.ids) : rows.where('workspace_id', '=', workspaceId)).limit(limit);
  // The parent condition again outside, so that an index led by it finds the rows (thread_refs: mailbox, then key).
  const scoped = loose.deleteFrom(name).where('workspace_id', '=', workspaceId);
  const result = await (parent ? scoped.where(parent.column, 'in', parent.ids) : scoped).where(keyColumn, 'in', batch).executeTakeFirst();
  return Number(result.numDeletedRows);
}
