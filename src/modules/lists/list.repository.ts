import type { Db } from '../../db/database.js';
import type { ListDirection, ListEntryTable, ListType } from './list.table.js';

/** List-entry queries; every one filters by workspace. */
export const listRepository = {
  insert: (db: Db, row: ListEntryTable) => db.insertInto('list_entries').values(row).execute(),
  list: (db: Db, workspaceId: string, direction: ListDirection, listType: ListType, limit: number, offset: number) =>
    db
      .selectFrom('list_entries')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('direction', '=', direction)
      .where('list_type', '=', listType)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute(),
  count: async (db: Db, workspaceId: string, direction: ListDirection, listType: ListType) =>
    Number(
      (
        await db
          .selectFrom('list_entries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workspace_id', '=', workspaceId)
          .where('direction', '=', direction)
          .where('list_type', '=', listType)
          .executeTakeFirstOrThrow()
      ).n,
    ),
  find: (db: Db, workspaceId: string, direction: ListDirection, listType: ListType, entry: string) =>
    db
      .selectFrom('list_entries')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('direction', '=', direction)
      .where('list_type', '=', listType)
      .where('entry', '=', entry)
      .executeTakeFirst(),
  delete: (db: Db, workspaceId: string, id: string) =>
    db.deleteFrom('list_entries').where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
  /** Entries that could match: the given address/domain keys, every IP entry, and whether an allow list exists. */
  candidates: (db: Db, workspaceId: string, direction: ListDirection, keys: readonly string[]) =>
    db
      .selectFrom('list_entries')
      .select(['list_type', 'entry', 'kind'])
      .where('workspace_id', '=', workspaceId)
      .where('direction', '=', direction)
      .where((eb) => eb.or([eb('kind', '=', 'ip'), ...(keys.length > 0 ? [eb('entry', 'in', keys)] : [])]))
      .execute(),
  hasAllowList: async (db: Db, workspaceId: string, direction: ListDirection) =>
    (await db
      .selectFrom('list_entries')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('direction', '=', direction)
      .where('list_type', '=', 'allow')
      .limit(1)
      .executeTakeFirst()) !== undefined,
} as const;
