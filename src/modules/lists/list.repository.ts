import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { ListDirection, ListEntryTable, ListType } from './list.table.js';

// Both run for every RCPT TO (prepared: see db/prepared.ts).
const candidatesQuery = preparedQuery<{ workspaceId: string; direction: ListDirection; keys: readonly string[] }, Pick<ListEntryTable, 'list_type' | 'entry' | 'kind'>>((db, p) => {
  const keys = p.list<string>('keys');
  return db
    .selectFrom('list_entries')
    .select(['list_type', 'entry', 'kind'])
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('direction', '=', p<ListDirection>('direction'))
    .where((eb) => eb.or([eb('kind', '=', 'ip'), ...(keys.length > 0 ? [eb('entry', 'in', keys)] : [])]));
});
const hasAllowListQuery = preparedQuery<{ workspaceId: string; direction: ListDirection }, { id: string }>((db, p) =>
  db.selectFrom('list_entries').select('id').where('workspace_id', '=', p<string>('workspaceId')).where('direction', '=', p<ListDirection>('direction')).where('list_type', '=', 'allow').limit(1),
);

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
  candidates: (db: Db, workspaceId: string, direction: ListDirection, keys: readonly string[]) => candidatesQuery(db, { workspaceId, direction, keys }),
  hasAllowList: async (db: Db, workspaceId: string, direction: ListDirection) => (await hasAllowListQuery(db, { workspaceId, direction })).length > 0,
} as const;
